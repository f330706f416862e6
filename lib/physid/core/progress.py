"""Progress bars for the terminal that runs the book, never for the page.

A tqdm bar drawn inside a notebook becomes an output (a widget, or a blank gap when it is
cleared) in the rendered page. :func:`progress` writes to the process's original standard
error instead: in a papermill kernel that is the terminal of ``make book``, and nothing reaches
the notebook.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tqdm.std import tqdm


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    desc: str = "",
    total: int | None = None,
    disable: bool = False,
    leave: bool = False,
    **kwargs: Any,
) -> tqdm:
    """A tqdm bar on the terminal (``sys.__stderr__``); disabled when that is not a terminal.

    A log file or a CI job gets no bar lines (``sys.__stderr__`` is then not a tty).
    """
    stream = sys.__stderr__
    interactive = stream is not None and stream.isatty()
    return tqdm(
        iterable,
        desc=desc,
        total=total,
        leave=leave,
        file=stream,
        disable=disable or not interactive,
        dynamic_ncols=True,
        **kwargs,
    )
