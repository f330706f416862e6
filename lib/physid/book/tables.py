"""The book's one table helper: results tables for pages and for the terminal.

A table is a list of rows (mappings with the same keys, the column headers). In a chapter,
:func:`show_table` displays it as an HTML ``<table>`` (a real table in the rendered page, with
its caption) and as plain text for a terminal; the benchmarks print :func:`format_text`. Floats
are written with ``digits`` significant digits, NaN as an en dash (a value that does not exist,
e.g. a metric of an estimator that collapsed), None as an empty cell and a flat sequence of
numbers as "(a, b, …)".
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["format_cell", "format_text", "show_table", "table_html"]

Rows = Sequence[Mapping[str, Any]]


def format_cell(value: Any, digits: int = 3) -> str:
    """One cell as text: floats to ``digits`` significant digits, NaN as "–", None as "", and a
    flat sequence of numbers (a tuple, a list, a 1-d array) as "(a, b, …)" with each number so
    written."""
    if value is None:
        return ""
    if (isinstance(value, tuple | list) or getattr(value, "ndim", None) == 1) and all(
        isinstance(v, numbers.Real) or getattr(v, "ndim", None) == 0 for v in value
    ):
        return "(" + ", ".join(format_cell(v, digits) for v in value) + ")"
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()  # a 0-d numpy or torch scalar
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "–"
        if math.isinf(number):
            return "∞" if number > 0 else "−∞"
        return f"{number:.{digits}g}"
    return str(value)


def _columns(rows: Rows) -> list[str]:
    if not rows:
        raise ValueError("rows must hold at least one row")
    columns = list(rows[0])
    for index, row in enumerate(rows):
        if list(row) != columns:
            raise ValueError(
                f"rows[{index}] has the columns {list(row)}, but rows[0] has {columns}"
            )
    return columns


def format_text(rows: Rows, digits: int = 3) -> str:
    """Rows as an aligned plain-text table (for terminals and ``text/plain`` output)."""
    columns = _columns(rows)
    table = [columns] + [[format_cell(row[c], digits) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    lines = ["  ".join(v.rjust(w) for v, w in zip(line, widths, strict=True)) for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def table_html(rows: Rows, caption: str = "", digits: int = 3) -> str:
    """Rows as an HTML table; text columns left-aligned, numeric columns right-aligned."""
    columns = _columns(rows)
    numeric = {
        c: all(isinstance(r[c], numbers.Real) and not isinstance(r[c], bool) for r in rows)
        for c in columns
    }

    def cell(tag: str, column: str, text: str) -> str:
        align = "right" if numeric[column] else "left"
        return f'<{tag} style="text-align: {align}">{html.escape(text)}</{tag}>'

    parts = ['<table class="physid-table table">']
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    parts.append("<thead><tr>" + "".join(cell("th", c, c) for c in columns) + "</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        cells = "".join(cell("td", c, format_cell(row[c], digits)) for c in columns)
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</tbody></table>")
    return "\n".join(parts)


def show_table(rows: Rows, caption: str = "", digits: int = 3) -> None:
    """Display ``rows`` in a notebook: HTML for the page, aligned text for a terminal."""
    from IPython.display import display

    text = format_text(rows, digits)
    if caption:
        text = f"{caption}\n{text}"
    display({"text/html": table_html(rows, caption, digits), "text/plain": text}, raw=True)
