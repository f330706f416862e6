"""The whole book at SCALE="quick": every chapter through the runner, then the HTML build."""

from __future__ import annotations

import json
import re

import pytest
from matplotlib.image import imread

from physid.book.runner import read_toc
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
    fields = {"id", "chapter", "statement", "paper", "ours", "holds", "scale", "section", "why"}
    fields |= {"cause", "ablation"}
    assert all(fields <= set(claim) for claim in claims)
    report = (quick_book.index.parent / "book" / "report.html").read_text()
    assert "physid-claims" in report
    for claim in claims:
        assert claim["id"] in report
        assert f'#{claim["section"]}"' in report, f"{claim['id']} does not link to its section"
        if not claim["holds"]:
            assert claim["why"] and claim["why"].split()[0] in report
    verdicts = re.findall(r"<td><p>(✓|✗ [^<]+)</p></td>", report)
    assert len(verdicts) == len(claims)
    causes = {"paper": "✗ the paper’s", "setup": "✗ our set-up’s", "open": "✗ open"}
    expected = ["✓" if c["holds"] else causes[c["cause"]] for c in claims]
    assert sorted(v.replace("'", "’") for v in verdicts) == sorted(expected)
    assert all(claim["holds"] or claim["cause"] in causes for claim in claims)


@pytest.mark.parametrize("docname", WIDGET_CHAPTERS)
def test_widget_state_is_embedded(quick_book, docname):
    html = (quick_book.index.parent / f"{docname}.html").read_text()
    assert 'type="application/vnd.jupyter.widget-state+json"' in html
    assert "application/vnd.jupyter.widget-view+json" in html


@pytest.mark.parametrize("docname", WIDGET_CHAPTERS)
def test_every_explorer_is_followed_by_a_static_figure(quick_book, docname):
    """The static page shows each explorer's default as a figure below it, before the next
    section: what a reader without a kernel (or without JavaScript) sees of the explorer."""
    html = (quick_book.index.parent / f"{docname}.html").read_text()
    views = [m.end() for m in re.finditer(r"application/vnd\.jupyter\.widget-view\+json", html)]
    for position in views:
        rest = html[position:]
        next_section = re.search(r"<section |<h2", rest)
        window = rest[: next_section.start()] if next_section else rest
        assert "<figure" in window or "<img" in window, (
            f"{docname}: an explorer with no static figure after it in its section"
        )


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


@pytest.mark.parametrize(
    "page, names",
    [
        ("api_book", ("physid.book.claims.record_claim", "physid.book.runner.run_book")),
        (
            "api_sliding",
            ("physid.sliding.model.simulate_slide", "physid.sliding.model.fit_friction"),
        ),
    ],
)
def test_api_reference_documents_the_library(quick_book, page, names):
    api = (quick_book.index.parent / "book" / f"{page}.html").read_text()
    assert "physid-summary" in api, f"{page} has no summary table"
    for name in names:
        assert f'id="{name}"' in api


def test_pages_load_nothing_from_the_network(quick_book):
    """Scripts and stylesheets come from the book itself (MathJax, the widget manager)."""
    html = quick_book.index.parent
    for page in html.rglob("*.html"):
        text = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert not remote, f"{page.relative_to(html)} loads {remote}"
    assert (html / "_static" / "vendor" / "mathjax" / "tex-mml-chtml.js").is_file()
    assert (html / "_static" / "vendor" / "html-manager" / "embed-amd.js").is_file()


def test_figures_are_numbered_per_chapter(quick_book):
    """Chapter n's figures read "Fig. n.1", "Fig. n.2", … (the toc numbers the chapters)."""
    for number, page in enumerate(CHAPTERS, start=1):
        html = (quick_book.index.parent / f"{page.docname}.html").read_text()
        labels = re.findall(r'<span class="caption-number">Fig\. ([0-9.]+) </span>', html)
        assert labels, f"{page.docname} has no numbered figure"
        assert all(label.startswith(f"{number}.") for label in labels), (page.docname, labels)
