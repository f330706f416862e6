"""The book runner: execute every chapter with papermill, collect claims, build the HTML.

``python -m physid.book --scale default`` (what ``make book`` calls):

1. reads the pages listed in ``_toc.yml`` (:func:`read_toc`);
2. executes each notebook chapter (a MyST Markdown file with a ``kernelspec``, read with
   jupytext) with papermill and the parameters ``SCALE`` and ``SEED``, writing the executed
   notebook to ``_build/executed/`` (:func:`execute_chapter`);
3. collects the claims every chapter recorded into ``_build/reproduction/claims.json`` and the
   figures it glued into ``_build/figures/<chapter>/`` (:mod:`physid.book.claims`);
4. stages a copy of the book in ``_build/source/`` in which the executed notebooks replace the
   chapter sources and the reproduction report carries the claim tables (:func:`stage_book`);
5. builds the HTML from it with execution off and warnings as errors (:func:`build_html`).

The pages work with no network: MathJax, require.js and the ipywidgets HTML manager are pinned npm
packages (:data:`~physid.book.vendor.VENDOR`), fetched once with ``npm pack`` into the ignored
``book/_static/vendor/`` (:func:`~physid.book.vendor.fetch_vendor`) and served from the book's own
``_static``. Chapters draw progress bars on the terminal that runs the book
(:mod:`physid.core.progress`); the kernel runs without ipykernel's capture of the process's standard
streams, so nothing written there reaches a page, and :func:`drop_progress_outputs` removes any bar
that still would.

A failing cell stops the run with a :class:`~physid.book.errors.ChapterError` naming the chapter and
the cell, a Sphinx warning fails the build with a :class:`~physid.book.errors.BuildError`, and bad
input (an unknown scale, a ``_toc.yml`` entry with no file, a parameters cell that computes) is a
ValueError.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import nbformat
import yaml

import physid
from physid.book.claims import (
    PAPERS,
    Claim,
    claims_from_notebook,
    report_markdown,
    summary_line,
    write_claims,
)
from physid.book.display import BOOK_RUN_ENV
from physid.book.errors import BuildError, ChapterError
from physid.book.provenance import RunRecord
from physid.book.vendor import fetch_vendor
from physid.core.scales import check_scale
from physid.core.validate import check_count, check_seed

#: The page whose staged copy receives the claim tables.
REPORT_DOCNAME = "book/report"
#: Parameters the runner injects into every notebook chapter.
PARAMETERS = ("SCALE", "SEED")

#: Kernel options: no capture of the process's own stdout/stderr (file descriptors 1 and 2),
#: so what a chapter writes to ``sys.__stderr__`` (its progress bars) stays on the terminal.
KERNEL_ARGUMENTS = ("--IPKernelApp.capture_fd_output=False",)
#: Seconds one cell may run at each scale before it counts as stalled (None: no limit). Cells
#: whose widgets captured their own output (``ipywidgets.interactive``) now and then left the
#: headless client waiting forever; the explorers no longer capture output
#: (:func:`physid.book.display.explorer`), and should a cell stall again, the chapter is run once
#: more and the rerun is reported. At the default scale the limit is an hour: the learning
#: chapter's training cell, healthy, ran 2,440 s on 2026-12-06 (commit 75becbb, a machine 15–30 %
#: slower than the run before), past the 2,400 s the limit was then.
CELL_TIMEOUT: dict[str, int | None] = {"quick": 600, "default": 3600, "paper": None}
#: How many times a chapter with a stalled cell is run in all.
ATTEMPTS = 2

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: A line of a tqdm bar ("name:  40%|####      | 2/5 [00:01<00:01, 2.0it/s]").
_PROGRESS_LINE = re.compile(r"\d+%\||\d+/\d+ \[[0-9:<?]+|[0-9.?]+ ?(it/s|s/it)\]")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_PROGRESS_MODELS = ("FloatProgressModel", "IntProgressModel")


@dataclass(frozen=True)
class Page:
    """One ``_toc.yml`` entry: its Sphinx docname and its source file."""

    docname: str
    path: Path

    @property
    def is_notebook(self) -> bool:
        """Whether the page is a notebook chapter (its front matter has a ``kernelspec``)."""
        return "kernelspec" in _read_notebook(self.path).metadata


@dataclass(frozen=True)
class ChapterRun:
    """The result of executing one chapter: ``seconds`` counts every run of it (``attempts``;
    more than one where a cell stalled), the stalled ones included."""

    page: Page
    notebook: Path
    seconds: float
    claims: list[Claim] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    attempts: int = 1


def _read_notebook(path: Path) -> Any:
    import jupytext

    return jupytext.read(path)


def _toc_files(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "file" in node:
            yield str(node["file"])
        for key in ("root", "parts", "chapters", "sections"):
            value = node.get(key)
            if key == "root" and value is not None:
                yield str(value)
            elif value is not None:
                yield from _toc_files(value)
    elif isinstance(node, list):
        for item in node:
            yield from _toc_files(item)


def read_toc(root: Path) -> list[Page]:
    """The pages of ``root/_toc.yml`` in reading order; ValueError for an entry with no file."""
    toc_path = Path(root) / "_toc.yml"
    if not toc_path.is_file():
        raise ValueError(f"root {str(root)!r} has no _toc.yml")
    toc = yaml.safe_load(toc_path.read_text())
    pages = []
    for entry in _toc_files(toc):
        docname = entry.removesuffix(".md")
        path = Path(root) / f"{docname}.md"
        if not path.is_file():
            raise ValueError(
                f"_toc.yml lists the chapter {entry!r}, but {path} does not exist "
                "(chapters are MyST Markdown files, listed without the .md suffix)"
            )
        pages.append(Page(docname=docname, path=path))
    if not pages:
        raise ValueError(f"{toc_path} lists no pages")
    return pages


def parameters_cell(nb: Any, chapter: str) -> dict[str, object]:
    """The literal assignments of the cell tagged ``parameters``.

    papermill injects its values in a new cell *after* this one, so anything computed here
    would silently keep its default: the cell may only assign literals to names.
    """
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"chapter {chapter!r} must have exactly one cell tagged 'parameters'")
    values: dict[str, object] = {}
    for statement in ast.parse(cells[0].source).body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            raise ValueError(
                f"chapter {chapter!r}: the parameters cell may only assign literals to names, "
                f"found {ast.unparse(statement)!r}"
            )
        try:
            value = ast.literal_eval(statement.value)
        except ValueError:
            raise ValueError(
                f"chapter {chapter!r}: parameter {statement.targets[0].id} must be a literal, "
                f"found {ast.unparse(statement.value)!r}"
            ) from None
        values[statement.targets[0].id] = value
    missing = [p for p in PARAMETERS if p not in values]
    if missing:
        raise ValueError(f"chapter {chapter!r}: the parameters cell lacks {', '.join(missing)}")
    return values


def _glued_figures(nb: Any) -> Iterator[tuple[str, bytes]]:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            scrapbook = output.get("metadata", {}).get("scrapbook", {})
            name = scrapbook.get("name")
            image = output.get("data", {}).get(scrapbook.get("mime_prefix", "") + "image/png")
            if name and image:
                yield name, base64.b64decode(image)


@contextmanager
def _kernel_environment() -> Iterator[None]:
    """Give the kernel the inline backend, whatever ``MPLBACKEND`` the caller has set, and
    :data:`~physid.book.display.BOOK_RUN_ENV`; restore both afterwards.

    Glued and displayed figures are PNG outputs only under the inline backend; a headless
    ``MPLBACKEND=Agg`` inherited by the kernel would silently drop them. The second tells the
    chapter that the book places its glued figures (:func:`physid.book.display.in_book_run`).
    """
    settings = {"MPLBACKEND": "module://matplotlib_inline.backend_inline", BOOK_RUN_ENV: "1"}
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def execute_chapter(
    page: Page, scale: str, seed: int, build_dir: Path, cell_timeout: int | None = -1
) -> ChapterRun:
    """Execute one notebook chapter with papermill into ``build_dir/executed``.

    Returns the executed notebook's path, the run time, the claims it recorded and the figures
    it glued (written to ``build_dir/figures/<chapter>/<name>.png``). A cell that runs longer
    than ``cell_timeout`` seconds (by default :data:`CELL_TIMEOUT` of the scale) counts as
    stalled: the chapter is run again, up to :data:`ATTEMPTS` times in all, and the returned
    ``attempts`` says how many runs it took.
    """
    from nbclient.exceptions import CellTimeoutError
    from papermill.exceptions import PapermillExecutionError

    try:
        check_scale(scale)
    except ValueError as error:
        raise ValueError(f"chapter {page.docname!r}: {error}") from None
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"chapter {page.docname!r}: SEED must be a non-negative int, got {seed!r}")
    if cell_timeout == -1:
        cell_timeout = CELL_TIMEOUT[scale]
    elif cell_timeout is not None:
        cell_timeout = check_count("cell_timeout", cell_timeout, minimum=1)
    nb = _read_notebook(page.path)
    if "kernelspec" not in nb.metadata:
        raise ValueError(f"chapter {page.docname!r} is not a notebook (it has no kernelspec)")
    parameters_cell(nb, page.docname)
    out = Path(build_dir) / "executed" / f"{page.docname}.ipynb"
    figure_dir = Path(build_dir) / "figures" / Path(page.docname).name
    # Nothing of an earlier run of this chapter survives this one, whatever happens to it.
    out.unlink(missing_ok=True)
    if figure_dir.exists():
        shutil.rmtree(figure_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()  # every run counts: a stalled one is time the chapter took
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with _disk_cache(Path(build_dir) / "cache"):
                _papermill(nb, out, page, scale, seed, cell_timeout)
            break
        except PapermillExecutionError as error:
            trace = _ANSI.sub("", "\n".join(error.traceback))
            raise ChapterError(
                f"chapter {page.docname!r} failed in cell {error.exec_count} "
                f"({error.ename}: {error.evalue}); executed notebook kept at {out}\n{trace}"
            ) from None
        except CellTimeoutError as error:
            print(
                f"chapter {page.docname!r}: a cell stalled for {cell_timeout} s "
                f"(run {attempt} of {ATTEMPTS})",
                file=sys.stderr,
            )
            if attempt == ATTEMPTS:
                raise ChapterError(
                    f"chapter {page.docname!r}: a cell ran longer than {cell_timeout} s in "
                    f"each of {ATTEMPTS} runs ({error}); executed notebook kept at {out}"
                ) from None
    seconds = time.perf_counter() - start
    executed = nbformat.read(out, as_version=4)
    figures = []
    for name, png in _glued_figures(executed):
        figure_dir.mkdir(parents=True, exist_ok=True)
        path = figure_dir / f"{name}.png"
        path.write_bytes(png)
        figures.append(path)
    claims = claims_from_notebook(executed, page.docname)
    return ChapterRun(
        page=page,
        notebook=out,
        seconds=seconds,
        claims=claims,
        figures=figures,
        attempts=attempt,
    )


@contextmanager
def _disk_cache(folder: Path) -> Iterator[None]:
    """Chapters cache their expensive runs (:mod:`physid.core.sweeps`) under the build folder,
    unless ``PHYSID_CACHE`` already says where; the setting is restored afterwards."""
    from physid.core.sweeps import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    if before is None:
        os.environ[CACHE_ENV] = str(folder.absolute())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)


def _papermill(
    nb: Any, out: Path, page: Page, scale: str, seed: int, cell_timeout: int | None
) -> None:
    import papermill

    with _kernel_environment():
        papermill.execute_notebook(
            nb,
            str(out),
            parameters={"SCALE": scale, "SEED": seed},
            kernel_name=nb.metadata.kernelspec.name,
            cwd=str(page.path.parent),
            progress_bar=False,
            execution_timeout=cell_timeout,
            extra_arguments=list(KERNEL_ARGUMENTS),
        )


def footer(record: RunRecord | None) -> str:
    """The footer of every built page: the library's version and, given, the run's record."""
    text = f"physid {physid.__version__}"
    if record is not None:
        text += f" · built by the run of {record.identity()}"
    return f"<p>{escape(text)}</p>"


def state_run_time(nb: Any, seconds: float, attempts: int = 1) -> None:
    """Say under the parameters cell how long the chapter's code ran with those parameters
    (the runner's own timing, over all ``attempts`` runs of it: where a cell stalled, the
    page says so)."""
    minutes, rest = divmod(round(seconds), 60)
    took = f"{minutes} min {rest} s" if minutes else f"{rest} s"
    index = next(
        (i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), 0
    )
    rerun = (f" in {attempts} runs (a cell passed the runner's time limit, and the chapter ran "
             "again, reading from the disk cache what the earlier run had finished)"
             if attempts > 1 else "")
    note = nbformat.v4.new_markdown_cell(
        f"*With these parameters the code of this chapter ran in {took}{rerun} when this page "
        "was built.*"
    )
    nb.cells.insert(index + 1, note)


def one_parameters_cell(nb: Any) -> None:
    """Give the chapter's own parameters cell the values papermill ran with, and drop the cell
    papermill injected after it: the page shows the values that ran, and a reader who
    downloads the notebook finds one parameters cell, whose edit takes effect."""
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    own = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if not injected or len(own) != 1:
        return
    ran = dict(nb.metadata.get("papermill", {}).get("parameters", {}))
    defaults = parameters_cell(nb, "the executed chapter")
    own[0].source = "\n".join(
        f"{name} = {json.dumps(ran.get(name, value))}" for name, value in defaults.items()
    )
    own[0].execution_count = injected[0].get("execution_count")
    nb.cells = [c for c in nb.cells if c not in injected]


def _progress_widgets(nb: Any) -> set[str]:
    """Ids of the progress-bar widgets in the notebook's saved widget state (tqdm.notebook):
    the bars, the boxes holding them and the boxes' other children (the bars' labels)."""
    state = nb.metadata.get("widgets", {}).get(_WIDGET_STATE, {}).get("state", {})
    bars = {key for key, model in state.items() if model.get("model_name") in _PROGRESS_MODELS}
    found = set(bars)
    for key, model in state.items():
        children = [str(c).removeprefix("IPY_MODEL_") for c in model.get("state", {}).get(
            "children", [])]
        if bars.intersection(children):
            found |= {key, *children}
    return found


def drop_progress_outputs(nb: Any) -> int:
    """Remove progress bars from the outputs of ``nb`` in place; return how many were removed.

    A bar is a stream line that looks like tqdm's (``40%|####``, ``it/s]``) or an output that
    displays a progress widget; the widget's saved state goes too. Other lines of the same
    stream output are kept.
    """
    widgets = _progress_widgets(nb)
    state = nb.metadata.get("widgets", {}).get(_WIDGET_STATE, {}).get("state", {})
    for key in widgets:
        state.pop(key, None)
    removed = 0
    for cell in nb.cells:
        kept = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                lines = re.split(r"(?<=[\r\n])", output.get("text", ""))
                clean = [line for line in lines if not _PROGRESS_LINE.search(line)]
                removed += len(lines) - len(clean)
                text = "".join(line for line in clean if line.strip("\r"))
                if text.strip():
                    output["text"] = text
                    kept.append(output)
                continue
            view = output.get("data", {}).get(_WIDGET_VIEW, {})
            if view.get("model_id") in widgets:
                removed += 1
                continue
            kept.append(output)
        if "outputs" in cell:
            cell["outputs"] = kept
    return removed


def stage_book(
    root: Path,
    pages: Sequence[Page],
    runs: Sequence[ChapterRun],
    claims: Sequence[Claim],
    stage: Path,
    record: RunRecord | None = None,
) -> Path:
    """Lay out the book to build: the root's config, the executed chapters, the other pages.

    The staged ``_config.yml`` turns execution off (the chapters are already executed), and
    the staged report page ends with the claim tables of :func:`physid.book.claims.report_markdown`
    (headed by the run they come from, ``record``, when given).
    """
    root, stage = Path(root), Path(stage)
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    config.setdefault("html", {})["extra_footer"] = footer(record)
    (stage / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copy2(root / "_toc.yml", stage / "_toc.yml")
    for bib in config.get("bibtex_bibfiles", []):
        shutil.copy2(root / bib, stage / bib)
    executed = {run.page.docname: run for run in runs}

    for page in pages:
        target = stage / page.docname
        target.parent.mkdir(parents=True, exist_ok=True)
        if page.docname in executed:
            run = executed[page.docname]
            nb = nbformat.read(run.notebook, as_version=4)
            one_parameters_cell(nb)
            state_run_time(nb, run.seconds, run.attempts)
            drop_progress_outputs(nb)
            nbformat.write(nb, target.with_suffix(".ipynb"))
        elif page.docname == REPORT_DOCNAME:
            run = None if record is None else record.identity()
            text = page.path.read_text().rstrip() + "\n\n" + report_markdown(claims, run)
            target.with_suffix(".md").write_text(text)
        else:
            shutil.copy2(page.path, target.with_suffix(".md"))
    static = root / "book" / "_static"
    if static.is_dir():
        fetch_vendor(static)
        shutil.copytree(static, stage / "book" / "_static")
    return stage


def _jupyter_book() -> str:
    local = Path(sys.executable).parent / "jupyter-book"
    found = str(local) if local.exists() else shutil.which("jupyter-book")
    if found is None:
        raise BuildError("jupyter-book is not installed (pip install -e '.[book]')")
    return found


def build_html(stage: Path, build_dir: Path) -> Path:
    """Build the staged book with ``-W -n --keep-going``; return the path of ``index.html``."""
    html = Path(build_dir) / "html"
    # Sphinx would reuse the doctrees of pages whose source did not change, and miss changed
    # docstrings (the API pages) and extensions: every build starts clean.
    for stale in (html, Path(build_dir) / ".doctrees"):
        if stale.exists():
            shutil.rmtree(stale)
    log = Path(build_dir) / "jupyter-book.log"
    command = [_jupyter_book(), "build", str(stage), "--path-output", str(Path(build_dir).parent)]
    command += ["-W", "-n", "--keep-going"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).splitlines()
        problems = [line for line in output if re.search("WARNING|ERROR|Error", line)]
        raise BuildError(
            f"jupyter-book build failed (exit {result.returncode}); full log in {log}\n"
            + "\n".join(problems[-40:])
        )
    index = html / "index.html"
    if not index.is_file():
        raise BuildError(f"jupyter-book reported success but wrote no {index}")
    return index


@dataclass(frozen=True)
class BookRun:
    """Everything one run of the book produced, and the record of that run."""

    index: Path
    claims_path: Path
    runs: list[ChapterRun]
    claims: list[Claim]
    record: RunRecord | None = None


#: What a run of the book writes under its build folder; a new run removes them all first
#: (the disk cache, ``cache/``, and the browser test's screenshots stay).
OUTPUTS = (
    "executed",
    "figures",
    "source",
    "html",
    ".doctrees",
    "reproduction",
    "jupyter-book.log",
)


def clear_outputs(build_dir: Path) -> None:
    """Remove every output of an earlier run from ``build_dir`` (:data:`OUTPUTS`)."""
    for name in OUTPUTS:
        path = Path(build_dir) / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def run_book(
    root: Path = Path("."), scale: str = "default", seed: int = 0, build_dir: Path | None = None
) -> BookRun:
    """Execute every chapter of ``root/_toc.yml`` at ``scale``, then build the HTML book.

    The outputs are transactional: the run first removes every output of an earlier one
    (:func:`clear_outputs`) and records itself in ``reproduction/run.json`` as running
    (:class:`~physid.book.provenance.RunRecord`); ``claims.json`` is written whole or not at
    all, and the record ends as ``complete``, or ``failed`` with the error (also on an
    interrupt). A killed run leaves ``running`` and no claims.
    """
    from tqdm.auto import tqdm

    check_scale(scale)
    seed = check_seed("seed", seed)
    root = Path(root).resolve()
    build_dir = Path(build_dir).resolve() if build_dir else root / "_build"
    if build_dir.name != "_build":
        raise ValueError(f"build_dir must be a folder named _build, got {str(build_dir)!r}")
    pages = read_toc(root)
    chapters = [page for page in pages if page.is_notebook]
    clear_outputs(build_dir)
    record_path = build_dir / "reproduction" / "run.json"
    record = RunRecord.start(root, scale, seed)
    record.write(record_path)
    try:
        runs = []
        with tqdm(chapters, desc=f"chapters ({scale})", unit="chapter") as bar:
            for page in bar:
                bar.set_postfix_str(page.docname)
                runs.append(execute_chapter(page, scale, seed, build_dir))
        claims = [claim for run in runs for claim in run.claims]
        claims_path = write_claims(claims, build_dir / "reproduction" / "claims.json")
        stage = stage_book(root, pages, runs, claims, build_dir / "source", record)
        index = build_html(stage, build_dir)
    except BaseException as error:
        record.end(error).write(record_path)
        raise
    record = record.end()
    record.write(record_path)
    return BookRun(index=index, claims_path=claims_path, runs=runs, claims=claims, record=record)


def summary(book: BookRun) -> str:
    """One screen: chapter times, where the HTML is, and the claims (which do not hold)."""
    lines = ["chapter times:"]
    for run in book.runs:
        rerun = f"  (run {run.attempts} times: a cell stalled)" if run.attempts > 1 else ""
        lines.append(f"  {run.seconds:7.1f} s  {run.page.docname}{rerun}")
    lines += ["", f"HTML: {book.index}", f"claims: {book.claims_path}"]
    if book.record is not None:
        lines.append(f"run: {book.record.describe()}")
    lines.append(summary_line(book.claims))
    for source in PAPERS:
        group = [c for c in book.claims if c.source == source]
        if group:
            held = sum(c.holds for c in group)
            lines.append(f"  {source:<11} {held}/{len(group)} hold")
    for claim in book.claims:
        if not claim.holds:
            lines.append(f"  does not hold: {claim.id}: paper {claim.paper}, ours {claim.ours}")
    return "\n".join(lines)
