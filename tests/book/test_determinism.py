"""The same command with the same seed gives the same claims.json.

The session's quick book is the first run. Every chapter of ``_toc.yml`` is executed a second time
at ``SCALE="quick"`` with the same seed, and its claims, written with
:func:`physid.book.claims.write_claims`, must be the same bytes as the first run's. Claims about
speed are left out: a timing is a measurement of the machine, not of the seed.
"""

from __future__ import annotations

import difflib
import re

import pytest

from physid.book.claims import Claim, write_claims
from physid.book.runner import execute_chapter, read_toc
from tests.conftest import ROOT

#: Every notebook chapter of the book, from ``_toc.yml``.
CHAPTERS = tuple(page.docname for page in read_toc(ROOT) if page.is_notebook)
#: A claim whose statement or criterion speaks of time measures the machine.
TIMING = re.compile(
    r"\b(faster|slower|speed|speed-?up|seconds?|ms|wall[- ]clock|throughput|per second|timing)\b",
    re.IGNORECASE,
)


def _seeded(claims: list[Claim]) -> list[Claim]:
    return [c for c in claims if not TIMING.search(f"{c.statement} {c.criterion}")]


@pytest.mark.book
def test_same_seed_gives_the_same_claims(quick_book, tmp_path):
    first_runs = {run.page.docname: run for run in quick_book.runs}
    missing = [name for name in CHAPTERS if name not in first_runs]
    assert not missing, f"{missing} are not in _toc.yml"
    first = [c for name in CHAPTERS for c in _seeded(first_runs[name].claims)]
    assert first, "the chapters recorded no claim that does not depend on timing"
    second = []
    for name in CHAPTERS:
        run = execute_chapter(first_runs[name].page, "quick", 0, tmp_path / "_build")
        second += _seeded(run.claims)
    a = write_claims(first, tmp_path / "first" / "claims.json").read_text()
    b = write_claims(second, tmp_path / "second" / "claims.json").read_text()
    diff = "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=1))
    assert a == b, f"the second run's claims differ:\n{diff}"
