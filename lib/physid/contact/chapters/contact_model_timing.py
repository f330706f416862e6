"""Timing one contact resolution, the fast solver against cvxpylayers (the contact-model
chapter's table of solver speeds and ``benchmarks/contact.py``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from physid.contact.chapters.contact_model import TaskRun
from physid.contact.events import leaf_space, stack_events
from physid.contact.model import ContactModel, ContactSpace
from physid.core.bench import Timing, interleaved, ratio
from physid.core.validate import (
    check_count,
    check_positive,
    check_seed,
)

__all__ = ["CONTENDERS", "BatchTiming", "time_resolutions", "timing_rows"]

#: The contenders of the timing, in the order they are timed within each repeat.
CONTENDERS = ("fast", "cvxpylayers, batched", "cvxpylayers, per sample")


@dataclass(frozen=True)
class BatchTiming:
    """Interleaved timings of one contact resolution batch (see :func:`time_resolutions`).

    Attributes:
        batch: problems per call.
        seconds: seconds per call of each contender in :data:`CONTENDERS`, per repeat.
    """

    batch: int
    seconds: dict[str, Timing]

    def rate(self, label: str) -> float:
        """Resolutions per second of ``label``, from its median time."""
        return self.batch / self.seconds[label].median

    def speedup(self, label: str) -> Timing:
        """How many times faster the fast solver is than ``label``, repeat by repeat."""
        return ratio(self.seconds[label], self.seconds["fast"])


def time_resolutions(
    run: TaskRun,
    batches,
    repeat: int,
    variant: str = "CM",
    seed: int = 0,
    window: float = 0.5,
) -> list[BatchTiming]:
    """Time one contact resolution (both phases, forward and backward) at each batch size.

    The problems of a batch are drawn at random (seeded) among the recorded single-contact
    problems of ``run``, and every contender solves the same batch: the fast solver's cost is
    set by the hardest problem of a batch (its interior point runs until all have converged),
    so a batch of the first problems in recording order is not representative. The contenders
    are timed in turn (:func:`physid.core.bench.interleaved`, ``repeat`` ≥ 5 times), so a slow
    spell of the machine hits them alike. A contender faster than ``window`` seconds per call
    is called several times per timed window (as many as fit in ``window``, counted on a timed
    warm-up call): a short window would make its time, and every ratio to it, hostage to a
    single interruption of the process.
    """
    check_count("repeat", repeat, minimum=5)
    check_seed("seed", seed)
    window = check_positive("window", window)
    pool = next(b for b in stack_events(run.events) if b.space.n_contacts == 1).space
    models = {
        "fast": ContactModel(variant=variant),
        "cvxpylayers, batched": ContactModel(variant=variant, solver="reference"),
        "cvxpylayers, per sample": ContactModel(
            variant=variant, solver="reference", batched_reference=False
        ),
    }
    generator = torch.Generator().manual_seed(seed)
    out = []
    for B in batches:
        B = check_count("batch", B, maximum=pool.batch)
        index = torch.randperm(pool.batch, generator=generator)[:B].to(pool.mu.device)
        space = ContactSpace(
            *(t[index] for t in (pool.factor, pool.velocity, pool.target, pool.mu, pool.cor)),
            pool.k,
        )

        def step(model: ContactModel, space: ContactSpace = space) -> None:
            leaf = leaf_space(space)
            model.resolve(leaf).impulse.sum().backward()

        calls = {}
        for label in CONTENDERS:
            start = time.perf_counter()
            step(models[label])  # the warm-up call, timed to size the window
            calls[label] = max(1, math.ceil(window / (time.perf_counter() - start)))

        def repeated(label: str, calls: dict[str, int] = calls) -> None:
            for _ in range(calls[label]):
                step(models[label])

        contenders = {label: (lambda label=label: repeated(label)) for label in CONTENDERS}
        timings = interleaved(contenders, repeat=repeat, warmup=False)
        seconds = {
            label: Timing(tuple(t / calls[label] for t in timing.samples))
            for label, timing in timings.items()
        }
        out.append(BatchTiming(B, seconds))
    return out


def timing_rows(timings: list[BatchTiming]) -> list[dict]:
    """Resolutions per second (medians) and the speed-ups with their spread over repeats."""
    rows = []
    for t in timings:
        per_sample = t.speedup("cvxpylayers, per sample")
        batched = t.speedup("cvxpylayers, batched")
        rows.append(
            {
                "batch": t.batch,
                "fast (1/s)": t.rate("fast"),
                "cvxpylayers batched (1/s)": t.rate("cvxpylayers, batched"),
                "cvxpylayers per sample (1/s)": t.rate("cvxpylayers, per sample"),
                "× per sample, median": per_sample.median,
                "× per sample, spread": per_sample.spread,
                "× batched, median": batched.median,
                "× batched, spread": batched.spread,
            }
        )
    return rows
