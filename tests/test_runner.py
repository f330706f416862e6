"""The runner's paths on a miniature book: success, and every error it must name."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from physid.book import BuildError, ChapterError, execute_chapter, read_toc, run_book

HEADER = textwrap.dedent(
    """\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---

    # A chapter

    ```{code-cell} ipython3
    :tags: [parameters]

    SCALE = "default"
    SEED = 0
    ```
    """
)

GOOD_BODY = textwrap.dedent(
    """
    ```{code-cell} ipython3
    import matplotlib.pyplot as plt
    from physid.claims import record_claim
    from physid.display import glue_figure, glue_number

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    glue_figure("fig-line", fig)
    glue_number("answer", 42.0)
    record_claim("tutorial-mini-answer", "The answer.", paper=42, ours=42.0,
                 criterion="equal", holds=True, scale=SCALE, section="mini-answer")
    ```

    (mini-answer)=
    ## The answer

    The answer is {glue:text}`answer:.0f`.

    ```{glue:figure} fig-line
    A line.
    ```
    """
)


def make_book(root: Path, body: str = GOOD_BODY, extra_toc: str = "", intro: str = "# Intro\n"):
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text("title: mini\nonly_build_toc_files: true\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        "  - file: book/chapter\n  - file: book/report\n" + extra_toc
    )
    (root / "book" / "intro.md").write_text(intro)
    (root / "book" / "report.md").write_text("# Reproduction report\n")
    (root / "book" / "chapter.md").write_text(HEADER + body)
    return root


def test_a_good_book_runs_and_collects_claims_and_figures(tmp_path):
    root = make_book(tmp_path / "mini")
    book = run_book(root, scale="quick", seed=3, build_dir=tmp_path / "_build")
    (run,) = book.runs
    assert run.page.docname == "book/chapter" and run.seconds > 0
    assert [p.name for p in run.figures] == ["fig-line.png"]
    assert run.figures[0].read_bytes().startswith(b"\x89PNG")
    (claim,) = json.loads(book.claims_path.read_text())
    assert claim["chapter"] == "book/chapter" and claim["scale"] == "quick"
    report = (tmp_path / "_build" / "html" / "book" / "report.html").read_text()
    assert "tutorial-mini-answer" in report
    chapter = (tmp_path / "_build" / "html" / "book" / "chapter.html").read_text()
    assert 'The answer is <span class="pasted-text">42</span>' in chapter
    assert "papermill" in json.loads(run.notebook.read_text())["metadata"]


def test_a_toc_entry_with_no_file_names_the_chapter(tmp_path):
    root = make_book(tmp_path / "mini", extra_toc="  - file: book/missing\n")
    with pytest.raises(ValueError, match="'book/missing'"):
        read_toc(root)


def test_an_unknown_scale_names_the_chapter(tmp_path):
    root = make_book(tmp_path / "mini")
    page = read_toc(root)[1]
    with pytest.raises(ValueError, match="chapter 'book/chapter'.*'huge'"):
        execute_chapter(page, "huge", 0, tmp_path / "_build")


def test_a_failing_cell_names_the_chapter_and_the_error(tmp_path):
    body = "\n```{code-cell} ipython3\nratio = 1 / 0\n```\n"
    root = make_book(tmp_path / "mini", body=body)
    with pytest.raises(ChapterError, match="chapter 'book/chapter'.*ZeroDivisionError") as error:
        run_book(root, scale="quick", build_dir=tmp_path / "_build")
    assert "ratio = 1 / 0" in str(error.value)


def test_a_computed_parameter_is_rejected(tmp_path):
    root = make_book(tmp_path / "mini")
    chapter = root / "book" / "chapter.md"
    chapter.write_text(chapter.read_text().replace("SEED = 0", "SEED = 2 if SCALE else 0"))
    with pytest.raises(ValueError, match="parameter SEED must be a literal"):
        run_book(root, scale="quick", build_dir=tmp_path / "_build")


def test_a_sphinx_warning_fails_the_build(tmp_path):
    root = make_book(tmp_path / "mini", intro="# Intro\n\nSee {doc}`no_such_page`.\n")
    with pytest.raises(BuildError, match="no_such_page"):
        run_book(root, scale="quick", build_dir=tmp_path / "_build")


def test_build_dir_must_be_named_build(tmp_path):
    root = make_book(tmp_path / "mini")
    with pytest.raises(ValueError, match="build_dir"):
        run_book(root, scale="quick", build_dir=tmp_path / "out")
