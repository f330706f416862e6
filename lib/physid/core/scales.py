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

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from physid.core.validate import check_count

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


def check_sizes(sizes: Any, zero: Sequence[str] = (), skip: Sequence[str] = ()) -> None:
    """Check and normalise the fields of a frozen sizes dataclass, in place.

    ``scale`` must be one of :data:`SCALES`; ``n_jobs`` a positive job count or -1 (every
    core); a field declared ``bool`` must be True or False; the fields named in ``skip`` are
    the caller's to check; every other field is a count, at least 1 (at least 0 for those
    named in ``zero``). A bad field raises an error naming it.
    """
    if not dataclasses.is_dataclass(sizes) or isinstance(sizes, type):
        raise TypeError(f"sizes must be a dataclass instance, got {sizes!r}")
    for f in dataclasses.fields(sizes):
        value = getattr(sizes, f.name)
        if f.name in skip:
            continue
        if f.name == "scale":
            check_scale(value)
        elif f.name == "n_jobs":
            if check_count("n_jobs", value, minimum=-1) == 0:
                raise ValueError(f"n_jobs must be a positive int or -1, got {value!r}")
        elif f.type in ("bool", bool):
            if not isinstance(value, bool):
                raise TypeError(f"{f.name} must be True or False, got {value!r}")
        else:
            minimum = 0 if f.name in zero else 1
            object.__setattr__(sizes, f.name, check_count(f.name, value, minimum))


def expect_sizes(sizes: Any, cls: type[T]) -> T:
    """``sizes`` if it is a ``cls`` (a chapter's sizes class), else a TypeError naming ``s``."""
    if not isinstance(sizes, cls):
        raise TypeError(f"s must be a {cls.__name__} (see SIZES), got {type(sizes).__name__}")
    return sizes
