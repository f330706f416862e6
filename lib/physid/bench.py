"""Benchmark tables: timing helpers, a printed table and `_build/benchmarks/<part>.json`.

Every script in ``benchmarks/`` measures its peers in the same run, prints one table and writes
one JSON file holding ``{"targets": [...], "rows": [...]}``, so ``make bench`` and the README
can report whether each target an issue names is met.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path("_build") / "benchmarks"


@dataclass(frozen=True)
class Target:
    """One performance target; ``met`` compares ``measured`` with ``target``.

    ``higher_is_better`` picks the direction: ``measured >= target`` (a speed-up) when true,
    ``measured <= target`` (a cost) when false.
    """

    id: str
    measured: float
    target: float
    unit: str
    higher_is_better: bool = True

    @property
    def met(self) -> bool:
        if self.higher_is_better:
            return self.measured >= self.target
        return self.measured <= self.target

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}


def best_time(fn: Callable[[], object], repeat: int = 3, number: int = 1) -> float:
    """Best seconds per call of ``fn``: ``repeat`` trials of ``number`` calls, after a warm-up."""
    if repeat < 1 or number < 1:
        raise ValueError(f"repeat and number must be >= 1, got repeat={repeat}, number={number}")
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of equal keys as a plain-text table; floats with four significant digits."""
    if not rows:
        return "(no rows)"
    keys = list(rows[0])

    def cell(value: Any) -> str:
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    table = [keys] + [[cell(row[k]) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(keys))]
    lines = ["  ".join(v.rjust(w) for v, w in zip(line, widths, strict=True)) for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_report(
    part: str,
    rows: Sequence[dict[str, Any]],
    targets: Sequence[Target],
    out_dir: Path = BENCH_DIR,
) -> Path:
    """Print the table and the targets, write ``<out_dir>/<part>.json`` and return its path."""
    print(format_table(rows))
    print()
    for target in targets:
        verdict = "met" if target.met else "NOT met"
        relation = ">=" if target.higher_is_better else "<="
        print(
            f"target {target.id}: {target.measured:.4g} {target.unit} "
            f"(want {relation} {target.target:g}) -> {verdict}"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{part}.json"
    payload = {"part": part, "targets": [t.as_dict() for t in targets], "rows": list(rows)}
    path.write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {path}")
    return path
