"""Run sizes: every chapter runs at one of three scales.

``"quick"`` is for the tests (``make test``, about a minute per chapter: it shows the code runs
end to end, far from the papers' sizes), ``"default"`` is the reproduction that ``make book``
renders (smaller than the papers' runs; each chapter states its cuts), and ``"paper"`` uses
the papers' own sizes where they state them. The report page of the book says the same to
its readers. A chapter's ``parameters``
cell holds only the literal ``SCALE``; the sizes behind each scale live in the library, next to
the code they size, as a mapping from scale to a frozen dataclass, read through :func:`select`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

#: The three run sizes, smallest first.
SCALES: tuple[str, ...] = ("quick", "default", "paper")

T = TypeVar("T")


def check_scale(scale: object) -> str:
    """Return ``scale`` if it is one of :data:`SCALES`, else raise a ValueError naming it."""
    if scale not in SCALES:
        raise ValueError(f"SCALE must be one of {', '.join(SCALES)}; got {scale!r}")
    return str(scale)


def select(sizes: Mapping[str, T], scale: str, what: str) -> T:
    """The entry of ``sizes`` for ``scale``; ``what`` names the sized experiment in errors.

    Every table must define all of :data:`SCALES`, so a missing entry is a library bug and is
    reported as such.
    """
    check_scale(scale)
    missing = [s for s in SCALES if s not in sizes]
    if missing:
        raise KeyError(f"sizes for {what!r} lack the scale(s) {missing}")
    return sizes[scale]
