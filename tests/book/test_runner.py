"""The runner's paths on a miniature book: success, and every error it must name."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat
import pytest

from physid.book import runner
from physid.book.provenance import RunRecord, load_record, write_text_atomic
from physid.book.runner import (
    BuildError,
    ChapterError,
    drop_progress_outputs,
    execute_chapter,
    read_toc,
    run_book,
    state_run_time,
    summary,
)

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
    from physid.book.claims import record_claim
    from physid.book.display import glue_figure, glue_number

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
    assert claim["section"] == "mini-answer" and claim["why"] == ""
    report = (tmp_path / "_build" / "html" / "book" / "report.html").read_text()
    assert "tutorial-mini-answer" in report
    assert 'href="chapter.html#mini-answer"' in report
    chapter = (tmp_path / "_build" / "html" / "book" / "chapter.html").read_text()
    assert 'The answer is <span class="pasted-text">42</span>' in chapter
    assert "papermill" in json.loads(run.notebook.read_text())["metadata"]
    staged = nbformat.read(tmp_path / "_build" / "source" / "book" / "chapter.ipynb", 4)
    parameter_tags = {"parameters", "injected-parameters"}
    tagged = [c for c in staged.cells if parameter_tags & set(c.metadata.get("tags", []))]
    assert [c.source for c in tagged] == ['SCALE = "quick"\nSEED = 3']  # one cell, the values run
    assert 'SCALE</span> <span class="o">=</span> <span class="s2">"quick"</span>' in chapter
    assert "With these parameters the code of this chapter ran in" in chapter
    assert "physid 0.1.0 · built by the run of commit unknown, scale quick, seed 3" in chapter
    record = load_record(tmp_path / "_build" / "reproduction" / "run.json")
    assert record == book.record
    assert (record.status, record.scale, record.seed) == ("complete", "quick", 3)
    assert record.error is None
    assert record.commit == "unknown"  # the miniature book is no git checkout
    assert "These results come from the run of commit unknown, scale quick, seed 3" in report
    assert f"run: {record.describe()}" in summary(book) and "complete" in record.describe()


def previous_run(build_dir: Path) -> list[Path]:
    """The outputs an earlier, complete run left in ``build_dir``."""
    outputs = [
        build_dir / "reproduction" / "claims.json",
        build_dir / "html" / "index.html",
        build_dir / "executed" / "book" / "chapter.ipynb",
        build_dir / "figures" / "chapter" / "fig-old.png",
        build_dir / "source" / "book" / "chapter.ipynb",
    ]
    for path in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from the previous run")
    (build_dir / "cache").mkdir()
    return outputs


def test_a_failed_run_leaves_nothing_that_looks_current(tmp_path):
    build_dir = tmp_path / "_build"
    old = previous_run(build_dir)
    root = make_book(tmp_path / "mini", body="\n```{code-cell} ipython3\nratio = 1 / 0\n```\n")
    with pytest.raises(ChapterError):
        run_book(root, scale="quick", build_dir=build_dir)
    left = [path for path in old if path.exists() and path.read_text() == "from the previous run"]
    assert left == []
    assert not (build_dir / "reproduction" / "claims.json").exists()
    assert not (build_dir / "html").exists()
    assert (build_dir / "cache").is_dir()  # the disk cache is kept
    record = load_record(build_dir / "reproduction" / "run.json")
    assert record.status == "failed" and record.finished is not None
    assert record.error.startswith("ChapterError: chapter 'book/chapter' failed")
    assert "failed" in record.describe() and "ZeroDivisionError" in record.describe()


def test_an_interrupted_run_is_marked_and_a_killed_one_stays_running(tmp_path, monkeypatch):
    build_dir = tmp_path / "_build"
    old = previous_run(build_dir)
    root = make_book(tmp_path / "mini")
    seen = []

    def interrupted(page, scale, seed, build_dir):
        # What a run killed here (no chance to end its record) would leave behind.
        seen.append(load_record(build_dir / "reproduction" / "run.json"))
        seen.append(sorted(p.relative_to(build_dir).as_posix() for p in build_dir.rglob("*")))
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "execute_chapter", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_book(root, scale="quick", seed=1, build_dir=build_dir)
    killed, files = seen
    assert killed.status == "running" and "incomplete" in killed.describe()
    assert files == ["cache", "reproduction", "reproduction/run.json"]
    assert not any(path.exists() for path in old)
    record = load_record(build_dir / "reproduction" / "run.json")
    assert (record.status, record.error, record.seed) == ("failed", "KeyboardInterrupt", 1)


def test_a_rerun_chapter_keeps_no_figure_of_its_last_run(tmp_path):
    root = make_book(tmp_path / "mini")
    stale = tmp_path / "_build" / "figures" / "chapter" / "fig-gone.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    run = execute_chapter(read_toc(root)[1], "quick", 0, tmp_path / "_build")
    assert sorted(p.name for p in stale.parent.iterdir()) == ["fig-line.png"]
    assert run.figures == [stale.parent / "fig-line.png"]


def test_claims_are_written_whole_or_not_at_all(tmp_path):
    path = tmp_path / "reproduction" / "claims.json"
    write_text_atomic(path, "[1, 2]")
    with pytest.raises(TypeError):
        write_text_atomic(path, None)
    assert path.read_text() == "[1, 2]"
    assert [p.name for p in path.parent.iterdir()] == ["claims.json"]


def test_a_run_record_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="status.*'done'"):
        RunRecord("abc", "quick", 0, "now", status="done")


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


def test_a_stalled_cell_is_run_again_and_counted(tmp_path):
    marker = tmp_path / "stalled-once"
    body = (
        "\n```{code-cell} ipython3\nimport pathlib, time\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "if not marker.exists():\n    marker.touch()\n    time.sleep(60)\n```\n"
    )
    root = make_book(tmp_path / "mini", body=body)
    page = read_toc(root)[1]
    run = execute_chapter(page, "quick", 0, tmp_path / "_build", cell_timeout=5)
    # The chapter's time counts the stalled run (at least its 5 s) and the second.
    assert run.attempts == 2 and 5 < run.seconds < 60
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "SCALE = 'quick'", metadata={"tags": ["parameters"]})])
    state_run_time(nb, 2500.4, 2)
    assert nb.cells[1].source == (
        "*With these parameters the code of this chapter ran in 41 min 40 s in 2 runs (a cell "
        "passed the runner's time limit, and the chapter ran again, reading from the disk cache "
        "what the earlier run had finished) when this page was built.*")
    sleeper = "\n```{code-cell} ipython3\nimport time\ntime.sleep(60)\n```\n"
    always = make_book(tmp_path / "always", body=sleeper)
    with pytest.raises(ChapterError, match="longer than 5 s in each of 2 runs"):
        execute_chapter(read_toc(always)[1], "quick", 0, tmp_path / "_build", cell_timeout=5)
    with pytest.raises(ValueError, match="cell_timeout must be >= 1"):
        execute_chapter(page, "quick", 0, tmp_path / "_build", cell_timeout=0)


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


@pytest.mark.parametrize(("scale", "seed", "match"), [("huge", 0, "huge"), ("quick", -1, "seed")])
def test_bad_arguments_remove_nothing(tmp_path, scale, seed, match):
    build_dir = tmp_path / "_build"
    old = previous_run(build_dir)
    root = make_book(tmp_path / "mini")
    with pytest.raises(ValueError, match=match):
        run_book(root, scale=scale, seed=seed, build_dir=build_dir)
    assert all(path.exists() for path in old)


PROGRESS_BODY = textwrap.dedent(
    """
    ```{code-cell} ipython3
    :tags: [remove-input]

    import sys
    import time
    from tqdm.auto import tqdm
    from physid.core.progress import progress

    # What physid.core.progress draws on a terminal, written where it writes it.
    sys.__stderr__.write("terminal-bar: 100%|##########| 3/3 [00:00<00:00, 99.0it/s]\\n")
    sys.__stderr__.flush()
    for _ in progress(range(3), desc="terminal-bar"):
        time.sleep(0.01)
    for _ in tqdm(range(3), desc="notebook-bar"):
        time.sleep(0.01)
    print("after the bars")
    ```
    """
)


def test_progress_goes_to_the_terminal_and_never_into_the_page(tmp_path, capfd):
    """What a chapter writes to ``sys.__stderr__`` reaches the terminal running the book, not
    the page; a bar drawn in the notebook itself (tqdm.auto) is removed from the page."""
    root = make_book(tmp_path / "mini", body=PROGRESS_BODY)
    run_book(root, scale="quick", build_dir=tmp_path / "_build")
    assert "terminal-bar: 100%" in capfd.readouterr().err
    executed = nbformat.read(tmp_path / "_build" / "executed" / "book" / "chapter.ipynb", 4)
    assert "terminal-bar" not in json.dumps([cell.get("outputs") for cell in executed.cells])
    page = (tmp_path / "_build" / "html" / "book" / "chapter.html").read_text()
    assert "after the bars" in page
    for text in ("terminal-bar", "notebook-bar", "it/s]", "100%|"):
        assert text not in page


def test_drop_progress_outputs_keeps_everything_else():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    bar = "fit:  40%|####  | 2/5 [00:01<00:01, 2.0it/s]\r"
    warning_and_bar = "a warning\nfit: 100%|#| 5/5 [00:02<00:00]\n"
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text=bar),
        nbformat.v4.new_output("stream", name="stderr", text=warning_and_bar),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "box", "version_major": 2},
            "text/plain": "HBox()"}),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "slider", "version_major": 2},
            "text/plain": "FloatSlider()"}),
    ]
    nb.cells = [cell]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "bar": {"model_name": "FloatProgressModel", "state": {}},
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_bar"]}},
        "slider": {"model_name": "FloatSliderModel", "state": {}},
    }}}
    assert drop_progress_outputs(nb) == 3
    texts = [o.get("text") for o in cell.outputs]
    assert texts == ["a warning\n", None]
    assert cell.outputs[1]["data"]["text/plain"] == "FloatSlider()"
