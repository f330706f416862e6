"""The bibliography's one style: author–year labels in the list, as in the text.

sphinxcontrib-bibtex cites author–year in the prose (``bibtex_reference_style:
author_year``), but its built-in formatting styles label the list alphabetically
(``[AAB+19]``). This Sphinx extension registers a pybtex formatting style, ``physid``, that
sorts by author and year and labels every entry "Song and Boularias, 2020" or
"Heiden et al., 2022", with a letter after the year when two entries would share a label.
Links come from the entries' ``doi``, ``eprint`` (arXiv) and ``url`` fields. The book's
``_config.yml`` loads it (``extra_extensions``) and sets ``bibtex_default_style: physid``.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle

#: The names under which the styles are registered with pybtex.
LABEL_STYLE = "physid_author_year"
FORMATTING_STYLE = "physid"


def _last_names(entry: Any) -> list[str]:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = []
    for person in people:
        words = [*person.prelast_names, *person.last_names]
        names.append(" ".join(_plain(word) for word in words))
    return names


def _plain(text: str) -> str:
    """A BibTeX name word without braces or accents commands (``Verd{\\'u}`` → ``Verdu``)."""
    kept = [ch for ch in text if ch not in "{}\\'\"`^~"]
    return "".join(kept)


def author_year(entry: Any) -> str:
    """``"A, 2020"``, ``"A and B, 2020"`` or ``"A et al., 2020"`` for one pybtex entry."""
    names = _last_names(entry) or [entry.fields.get("title", entry.key)]
    if len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels of the form "Song and Boularias, 2020", disambiguated with a, b, … ."""

    def format_labels(self, sorted_entries: Iterable[Any]) -> Iterator[str]:
        entries = list(sorted_entries)
        labels = [author_year(entry) for entry in entries]
        counts = Counter(labels)
        seen: Counter[str] = Counter()
        for label in labels:
            if counts[label] > 1:
                yield label + string.ascii_lowercase[seen[label]]
                seen[label] += 1
            else:
                yield label


class AuthorYearStyle(PlainStyle):
    """pybtex's ``plain`` formatting (sorted by author, year, title) with author–year labels."""

    default_label_style = LABEL_STYLE


def setup(app: Any) -> dict[str, Any]:
    """Register the styles with pybtex (the Sphinx extension entry point)."""
    register_plugin("pybtex.style.labels", LABEL_STYLE, AuthorYearLabelStyle)
    register_plugin("pybtex.style.formatting", FORMATTING_STYLE, AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
