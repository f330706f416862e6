"""What chapters paste into their pages: glued numbers and words, figures, the figure style.

Every number in a chapter's prose is glued from the run (never typed), and so is every input
constant the prose mentions. :func:`glue_number` refuses NaN, infinities and values outside a
range the caller states, so a broken result cannot reach a page as a plausible number.
:func:`glue_count` glues a count with its noun in the right number ("1 push", "4 pushes").
They return None, so a hidden cell that ends with one leaves no value on the page.
:func:`use_book_style` sets the one figure style of the book; chapters call it once.
"""

from __future__ import annotations

import base64
import io
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from physid.core.validate import as_number, check_count, check_number

#: The environment variable the book runner sets in a chapter's kernel (:func:`in_book_run`).
BOOK_RUN_ENV = "PHYSID_BOOK_RUN"

#: The book's figure style: legible at the page's width, sharp on high-density screens.
BOOK_STYLE: dict[str, Any] = {
    "figure.dpi": 150,
    "savefig.dpi": 150,
    "figure.figsize": (7.0, 3.6),
    "figure.constrained_layout.use": True,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": "viridis",
}


def use_book_style() -> None:
    """Apply :data:`BOOK_STYLE` to matplotlib (a chapter calls this once, after its imports)."""
    mpl.rcParams.update(BOOK_STYLE)


def in_book_run() -> bool:
    """Whether the book runner executes this chapter (:data:`BOOK_RUN_ENV` is set in its
    kernel): then a glued figure appears only where a ``{glue:figure}`` directive places it;
    in Jupyter it is shown where it is made, too."""
    return bool(os.environ.get(BOOK_RUN_ENV))


def glue_number(name: str, value: Any, *, within: tuple[float, float] | None = None) -> None:
    """Glue ``value`` as a Python float (``{glue:text}`name:.3f``` formats it).

    ``value`` may be a Python, numpy or 0-d torch number. It must be finite and, when
    ``within=(low, high)`` is given, lie in that closed range: a value outside it is a
    ValueError naming the glue name, since the prose around it was written for that range.
    ``within`` itself must be two real numbers, neither NaN (an end may be infinite), with
    ``low <= high``: NaN or reversed bounds would let any value through, or none, and are a
    ValueError naming ``within``.
    """
    from myst_nb import glue

    low, high = _check_within(name, within) if within is not None else (None, None)
    number = check_number(f"value for {name!r}", value, low=low, high=high)
    glue(name, number, display=False)


def _check_within(name: str, within: Any) -> tuple[float, float]:
    """``within`` of :func:`glue_number` as ``(low, high)``: two real numbers, no NaN, in order."""
    problem = f"within for {name!r} must be (low, high) with low <= high and no NaN, got {within!r}"
    if isinstance(within, str) or not hasattr(within, "__len__") or len(within) != 2:
        raise ValueError(problem)
    try:
        low, high = (as_number(f"within for {name!r}", end) for end in within)
    except (TypeError, ValueError) as error:
        raise ValueError(problem) from error
    if math.isnan(low) or math.isnan(high) or low > high:
        raise ValueError(problem)
    return low, high


def glue_text(name: str, text: str) -> None:
    """Glue a short text (a computed word or phrase) for ``{glue:text}`name```."""
    from myst_nb import glue

    if not isinstance(text, str) or not text.strip():
        raise TypeError(f"text for {name!r} must be a non-empty string, got {text!r}")
    glue(name, text, display=False)


def plural(count: Any, singular: str, plural_form: str | None = None) -> str:
    """``"1 push"``, ``"4 pushes"``: the count and its noun in the right number."""
    n = check_count("count", count, minimum=0)
    word = singular if n == 1 else (plural_form or singular + "s")
    return f"{n:,} {word}"


def glue_count(name: str, count: Any, singular: str, plural_form: str | None = None) -> None:
    """Glue a count with its noun (see :func:`plural`) as text under ``name``."""
    glue_text(name, plural(count, singular, plural_form))


@dataclass(frozen=True)
class Bounded:
    """A number the prose was written for the range ``[low, high]`` of (:func:`glue_all`
    glues it with ``within=(low, high)``)."""

    value: Any
    low: float
    high: float


def glue_all(values: Mapping[str, Any]) -> None:
    """Glue every entry of ``values`` (glue name → value): a string as text
    (:func:`glue_text`), a :class:`Bounded` number within its range and any other number as
    a number (:func:`glue_number`). A chapter's driver returns such a mapping for what its
    prose quotes, so the chapter glues it in one call."""
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a mapping of glue names, got {type(values).__name__}")
    for name, value in values.items():
        if isinstance(value, str):
            glue_text(name, value)
        elif isinstance(value, Bounded):
            glue_number(name, value.value, within=(value.low, value.high))
        else:
            glue_number(name, value)


def glue_figure(name: str, fig: Figure) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive, then close it.

    Run by the book runner (:func:`in_book_run`) the figure appears only where the directive
    places it; opened in Jupyter, the chapter also shows it here, since there no directive is
    rendered. Closing keeps the inline backend from showing it a second time at the end of the
    cell; the book runner also writes every glued figure to ``_build/figures/<chapter>/``.
    """
    from myst_nb import glue

    if not isinstance(fig, Figure):
        raise TypeError(f"fig for {name!r} must be a matplotlib Figure, got {type(fig).__name__}")
    glue(name, fig, display=not in_book_run())
    plt.close(fig)


def figure_output(fig: Figure) -> dict[str, Any]:
    """``fig`` as a notebook ``display_data`` output (PNG at the book's dpi), then closed."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {
        "output_type": "display_data",
        "data": {"image/png": png, "text/plain": "<Figure>"},
        "metadata": {},
    }


def explorer(draw: Callable[..., Figure], **controls: Any) -> Any:
    """An ipywidgets explorer: ``controls`` (widgets by keyword) over the figure ``draw`` makes.

    ``draw(**values)`` returns a new matplotlib Figure for the controls' current values. The
    figure is written into the view's Output widget as data (:func:`figure_output`), not
    captured from a running cell as ``ipywidgets.interactive`` does: a notebook executed
    headless (papermill, nbclient) then never routes cell output through the widget, a capture
    that was seen to leave the client waiting forever, and the page built from the executed
    notebook shows the default view. Moving a control redraws (with a live kernel).

    The built book has no kernel: there the book's ``physid-widgets.js`` disables every control
    of the explorer and says, above it and in each control's tooltip, to run the notebook to
    move them. In Jupyter that script does not load, and the controls stay enabled.
    """
    import ipywidgets as widgets

    if not callable(draw):
        raise TypeError(f"draw must be callable, got {type(draw).__name__}")
    if not controls:
        raise ValueError("controls must name at least one widget")
    output = widgets.Output()

    def render(_change: object = None) -> None:
        output.outputs = (figure_output(draw(**{k: w.value for k, w in controls.items()})),)

    for control in controls.values():
        control.observe(render, names="value")
    render()
    return widgets.VBox([*controls.values(), output])
