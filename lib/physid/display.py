"""Glue helpers for chapters: numbers and figures pasted into the prose by MyST-NB."""

from __future__ import annotations

import math
import numbers

import matplotlib.pyplot as plt
from matplotlib.figure import Figure


def glue_number(name: str, value: float) -> float:
    """Glue ``value`` as a plain Python float (``{glue:text}`name:.3f``` formats it)."""
    from myst_nb import glue

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"value for {name!r} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"value for {name!r} must be finite, got {number!r}")
    glue(name, number, display=False)
    return number


def glue_figure(name: str, fig: Figure) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive, then close it.

    Closing keeps the inline backend from showing the figure a second time at the end of the
    cell; the book runner also writes every glued figure to ``_build/figures/<chapter>/``.
    """
    from myst_nb import glue

    if not isinstance(fig, Figure):
        raise ValueError(f"fig for {name!r} must be a matplotlib Figure, got {type(fig).__name__}")
    glue(name, fig, display=False)
    plt.close(fig)
