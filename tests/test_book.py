"""The whole book at SCALE="quick": every chapter through the runner, then the HTML build."""

from __future__ import annotations

import json

import pytest
from matplotlib.image import imread

from physid.book import read_toc
from tests.conftest import ROOT

CHAPTERS = [page for page in read_toc(ROOT) if page.is_notebook]
#: Chapters with an ipywidgets explorer, whose state must be embedded in the HTML.
WIDGET_CHAPTERS = [page.docname for page in CHAPTERS]


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.docname)
def test_chapter_runs_with_figures_and_claims(quick_book, page):
    (run,) = [run for run in quick_book.runs if run.page == page]
    assert run.notebook.is_file() and run.seconds > 0
    assert run.figures, f"{page.docname} glued no figure"
    for figure in run.figures:
        pixels = imread(figure)
        assert pixels.shape[0] > 100 and pixels.std() > 0.01, f"{figure} is blank"
    assert run.claims, f"{page.docname} recorded no claim"
    assert all(c.scale == "quick" and c.chapter == page.docname for c in run.claims)


def test_claims_json_and_report_page(quick_book):
    claims = json.loads(quick_book.claims_path.read_text())
    assert {"id", "chapter", "statement", "paper", "ours", "holds", "scale"} <= set(claims[0])
    report = (quick_book.index.parent / "book" / "report.html").read_text()
    for claim in claims:
        assert claim["id"] in report
    assert "does not hold" in report or "holds" in report


@pytest.mark.parametrize("docname", WIDGET_CHAPTERS)
def test_widget_state_is_embedded(quick_book, docname):
    html = (quick_book.index.parent / f"{docname}.html").read_text()
    assert 'type="application/vnd.jupyter.widget-state+json"' in html
    assert "application/vnd.jupyter.widget-view+json" in html


def test_tutorial_identifies_mu_and_glues_it(quick_book):
    (run,) = [r for r in quick_book.runs if r.page.docname == "book/tutorial_sliding_box"]
    claims = {c.id: c for c in run.claims}
    assert claims["tutorial-identified-mu"].holds
    assert claims["tutorial-gradient-matches-fd"].holds
    glue = json.loads(
        (
            quick_book.index.parents[1]
            / "jupyter_execute"
            / "book"
            / "tutorial_sliding_box.glue.json"
        ).read_text()
    )
    mu_fit = float(glue["mu_fit"]["data"]["text/plain"])
    assert mu_fit == pytest.approx(0.3, rel=0.01)


def test_api_reference_documents_the_library(quick_book):
    api = (quick_book.index.parent / "book" / "api.html").read_text()
    for name in ("record_claim", "run_book", "simulate_slide", "fit_friction"):
        assert 'id="physid.' in api and name in api
