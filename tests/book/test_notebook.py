"""A chapter opened as a plain notebook (as in Jupyter, not through the book runner) works: its
first cell's SCALE is the one that runs, its figures are in its outputs, and its hidden cells
leave no stray value."""

from __future__ import annotations

import os

import jupytext
import nbformat
import pytest

from physid.book.claims import CLAIM_KEY
from physid.book.display import BOOK_RUN_ENV
from tests.conftest import ROOT

CHAPTER = ROOT / "book" / "tutorial_sliding_box.md"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    from nbclient import NotebookClient

    nb = jupytext.read(CHAPTER)
    (parameters,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert nb.cells.index(parameters) == next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "code"
    ), "the parameters cell is the chapter's first code cell"
    parameters.source = parameters.source.replace('SCALE = "default"', 'SCALE = "quick"')
    assert 'SCALE = "quick"' in parameters.source
    environment = {k: v for k, v in os.environ.items() if k != BOOK_RUN_ENV}
    environment.update(PHYSID_CACHE="off", MPLBACKEND="module://matplotlib_inline.backend_inline")
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)
    try:
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(CHAPTER.parent)}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    nbformat.write(nb, tmp_path_factory.mktemp("notebook") / "tutorial.ipynb")
    return nb


def outputs(nb, *, hidden=None):
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        removed = "remove-cell" in cell.metadata.get("tags", [])
        if hidden is None or hidden == removed:
            yield from cell.get("outputs", [])


def test_the_first_cells_scale_is_the_one_that_ran(executed):
    claims = [
        o["metadata"][CLAIM_KEY] for o in outputs(executed) if CLAIM_KEY in o.get("metadata", {})
    ]
    assert claims and {c["scale"] for c in claims} == {"quick"}


def test_the_figures_are_in_the_outputs(executed):
    shown = [o for o in outputs(executed) if "image/png" in o.get("data", {})]
    glued = [
        o
        for o in shown
        if o.get("metadata", {}).get("scrapbook", {}).get("name", "").startswith("fig")
    ]
    assert len(glued) >= 3, "every glued figure is shown in the notebook too"


def test_hidden_cells_leave_no_stray_value(executed):
    stray = [
        o
        for o in outputs(executed, hidden=True)
        if o["output_type"] in ("execute_result", "stream")
    ]
    assert stray == []
