"""Benchmark tables: interleaved timings, ratios with their spread, `_build/benchmarks/<part>.json`.

Every script in ``benchmarks/`` measures its contenders in the same run with :func:`interleaved`:
one call of each contender in turn, repeated (at least 5 times), so that a slow spell of the
machine hits all of them alike. A ratio is taken repeat by repeat (:func:`ratio`); the script
reports its median and its spread (the smallest and largest repeat), and each target is judged
on the median. :func:`write_report` prints the table and the targets and writes one JSON file
holding ``{"targets": [...], "rows": [...]}``, so ``make bench`` and the README can report
whether each of the book's performance targets is met.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from physid.book.tables import format_text
from physid.core.validate import check_count, check_positive

BENCH_DIR = Path("_build") / "benchmarks"

#: The fewest repeats a reported timing may rest on.
MIN_REPEATS = 5


@dataclass(frozen=True)
class Timing:
    """Repeated measurements of one quantity (seconds per call, or a ratio of them)."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    @property
    def spread(self) -> str:
        """``"low–high"`` with three significant digits, for a table column."""
        return f"{self.low:.3g}–{self.high:.3g}"


def interleaved(
    contenders: Mapping[str, Callable[[], object]],
    repeat: int = MIN_REPEATS,
    number: int = 1,
    warmup: bool = True,
    min_seconds: float | None = None,
) -> dict[str, Timing]:
    """Seconds per call of each contender, measured in turn ``repeat`` times.

    Each repeat times ``number`` calls of every contender, one contender after the other, so
    that slow spells of the machine fall on all of them; one warm-up call of each comes first.
    With ``min_seconds``, each contender is instead called, within a repeat, as many times in a
    row as fill ``min_seconds`` (judged from one timed call after the warm-up, as ``timeit``'s
    autorange does): a call of a few milliseconds is then timed as a loop calls it, and not as
    one call whose caches the previous contender's work has just emptied.
    """
    check_count("repeat", repeat, minimum=MIN_REPEATS)
    check_count("number", number, minimum=1)
    if min_seconds is not None:
        min_seconds = check_positive("min_seconds", min_seconds)
    if not contenders:
        raise ValueError("contenders must name at least one function to time")
    if warmup:
        for fn in contenders.values():
            fn()
    numbers = dict.fromkeys(contenders, number)
    if min_seconds is not None:
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            numbers[name] = max(1, math.ceil(min_seconds / (time.perf_counter() - start)))
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            samples[name].append((time.perf_counter() - start) / numbers[name])
    return {name: Timing(tuple(values)) for name, values in samples.items()}


def ratio(numerator: Timing, denominator: Timing) -> Timing:
    """The ratio of two interleaved timings, repeat by repeat (a speed-up when slow / fast)."""
    if len(numerator.samples) != len(denominator.samples):
        raise ValueError(
            f"the timings must have as many repeats: {len(numerator.samples)} and "
            f"{len(denominator.samples)}"
        )
    return Timing(tuple(a / b for a, b in zip(numerator.samples, denominator.samples, strict=True)))


@dataclass(frozen=True)
class Target:
    """One performance target, judged on the median; ``spread`` is the range over repeats.

    ``higher_is_better`` picks the direction: ``measured >= target`` (a speed-up) when true,
    ``measured <= target`` (a cost) when false.
    """

    id: str
    measured: float
    target: float
    unit: str
    higher_is_better: bool = True
    spread: tuple[float, float] | None = None

    @classmethod
    def from_timing(
        cls, id: str, timing: Timing, target: float, unit: str, higher_is_better: bool = True
    ) -> Target:
        """A target judged on ``timing``'s median, carrying its spread."""
        return cls(id, timing.median, target, unit, higher_is_better, (timing.low, timing.high))

    @property
    def met(self) -> bool:
        if self.higher_is_better:
            return self.measured >= self.target
        return self.measured <= self.target

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}


def write_report(
    part: str,
    rows: Sequence[dict[str, Any]],
    targets: Sequence[Target],
    out_dir: Path = BENCH_DIR,
) -> Path:
    """Print the table and the targets, write ``<out_dir>/<part>.json`` and return its path."""
    print(format_text(rows))
    print()
    for target in targets:
        verdict = "met" if target.met else "NOT met"
        relation = ">=" if target.higher_is_better else "<="
        spread = ""
        if target.spread is not None:
            spread = f" [spread {target.spread[0]:.3g}–{target.spread[1]:.3g}]"
        print(
            f"target {target.id}: median {target.measured:.4g} {target.unit}{spread} "
            f"(want {relation} {target.target:g}) -> {verdict}"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{part}.json"
    payload = {"part": part, "targets": [t.as_dict() for t in targets], "rows": list(rows)}
    path.write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {path}")
    return path
