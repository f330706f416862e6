"""Run sizes: every chapter runs at one of three scales.

``"quick"`` is for the tests (``make test``, about a minute per chapter: it shows the code runs
end to end, far from the papers' sizes), ``"default"`` is the reproduction that ``make book``
renders (smaller than the papers' runs; each chapter states its cuts), and ``"paper"`` uses
the papers' own sizes where they state them. The report page of the book says the same to
its readers. A chapter's ``parameters``
cell holds only the literal ``SCALE``; the sizes behind each scale live in the library, next to
the code they size, as a :class:`SizeTable` of frozen :class:`Sizes` dataclasses, one per scale.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from physid.core.validate import check_count, check_positive

#: The three run sizes, smallest first.
SCALES: tuple[str, ...] = ("quick", "default", "paper")

T = TypeVar("T")


def check_scale(scale: object) -> str:
    """Return ``scale`` if it is one of :data:`SCALES`, else raise a ValueError naming it."""
    if scale not in SCALES:
        raise ValueError(f"SCALE must be one of {', '.join(SCALES)}; got {scale!r}")
    return str(scale)


class Sizes:
    """Base of every sized experiment's run sizes: a frozen dataclass checked when it is made.

    A subclass is a ``@dataclass(frozen=True)`` whose fields are checked by their declared type
    (:func:`~physid.core.scales.check_sizes`): ``scale`` one of :data:`SCALES`; ``n_jobs`` a
    positive job count or -1 (every core); an ``int`` a count, at least 1 (at least 0 for the
    fields named in ``ZERO``); a ``float`` a positive, finite number; a ``bool`` True or False.
    Fields of any other type, and conditions between fields, are checked by the subclass's
    ``check()``.
    """

    #: Count fields that may be 0.
    ZERO: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        check_sizes(self, zero=self.ZERO)
        self.check()

    def check(self) -> None:
        """Check what :func:`~physid.core.scales.check_sizes` leaves alone (nothing here)."""


S = TypeVar("S", bound=Sizes)


class SizeTable(Mapping[str, S]):
    """The sizes of one experiment at each of :data:`SCALES`: ``table[scale]``.

    Made once, where the sized code lives. A table that lacks a scale or has one too many, mixes
    sizes classes, or holds an entry whose ``scale`` field names another scale is a library bug,
    reported when it is made; looking up a scale that is not one of :data:`SCALES` is a
    ValueError naming it.
    """

    def __init__(self, what: str, **by_scale: S) -> None:
        if set(by_scale) != set(SCALES):
            raise KeyError(
                f"sizes for {what!r} must have exactly the scales {SCALES}, got {tuple(by_scale)}"
            )
        kinds = {type(sizes) for sizes in by_scale.values()}
        if len(kinds) != 1 or not issubclass(next(iter(kinds)), Sizes):
            names = sorted(kind.__name__ for kind in kinds)
            raise TypeError(f"sizes for {what!r} must all be of one Sizes class, got {names}")
        for scale, sizes in by_scale.items():
            if getattr(sizes, "scale", scale) != scale:
                raise ValueError(f"sizes for {what!r} at {scale!r} say scale={sizes.scale!r}")
        self.what = what
        self._by_scale = {scale: by_scale[scale] for scale in SCALES}

    def __getitem__(self, scale: str) -> S:
        return self._by_scale[check_scale(scale)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_scale)

    def __len__(self) -> int:
        return len(self._by_scale)

    def __repr__(self) -> str:
        return f"SizeTable({self.what!r}, {self._by_scale!r})"


def check_sizes(sizes: Any, zero: Sequence[str] = ()) -> None:
    """Check and normalise the fields of a frozen sizes dataclass, in place, by declared type.

    ``scale`` must be one of :data:`SCALES`; ``n_jobs`` a positive job count or -1 (every
    core); a field declared ``bool`` must be True or False; ``int``, a count, at least 1 (at
    least 0 for those named in ``zero``); ``float``, a positive finite number. Fields of other
    types are the caller's to check. A bad field raises an error naming it.
    """
    if not dataclasses.is_dataclass(sizes) or isinstance(sizes, type):
        raise TypeError(f"sizes must be a dataclass instance, got {sizes!r}")
    types = typing.get_type_hints(type(sizes))
    for f in dataclasses.fields(sizes):
        value, kind = getattr(sizes, f.name), types[f.name]
        if f.name == "scale":
            check_scale(value)
        elif f.name == "n_jobs":
            if check_count("n_jobs", value, minimum=-1) == 0:
                raise ValueError(f"n_jobs must be a positive int or -1, got {value!r}")
        elif kind is bool:
            if not isinstance(value, bool):
                raise TypeError(f"{f.name} must be True or False, got {value!r}")
        elif kind is int:
            minimum = 0 if f.name in zero else 1
            object.__setattr__(sizes, f.name, check_count(f.name, value, minimum))
        elif kind is float:
            object.__setattr__(sizes, f.name, check_positive(f.name, value))


def expect_sizes(sizes: Any, cls: type[T]) -> T:
    """``sizes`` if it is a ``cls`` (a chapter's sizes class), else a TypeError naming ``s``."""
    if not isinstance(sizes, cls):
        raise TypeError(f"s must be a {cls.__name__} (see SIZES), got {type(sizes).__name__}")
    return sizes
