"""The book runner: execute every chapter with papermill, collect claims, build the HTML.

``python -m physid.book --scale default`` (what ``make book`` calls):

1. reads the pages listed in ``_toc.yml`` (:func:`read_toc`);
2. executes each notebook chapter (a MyST Markdown file with a ``kernelspec``, read with
   jupytext) with papermill and the parameters ``SCALE`` and ``SEED``, writing the executed
   notebook to ``_build/executed/`` (:func:`execute_chapter`);
3. collects the claims every chapter recorded into ``_build/reproduction/claims.json`` and the
   figures it glued into ``_build/figures/<chapter>/`` (:mod:`physid.claims`);
4. stages a copy of the book in ``_build/source/`` in which the executed notebooks replace the
   chapter sources and the reproduction report carries the claim tables (:func:`stage_book`);
5. builds the HTML from it with execution off and warnings as errors (:func:`build_html`).

A failing cell stops the run with a :class:`ChapterError` naming the chapter and the cell, a
Sphinx warning fails the build with a :class:`BuildError`, and bad input (an unknown scale, a
``_toc.yml`` entry with no file, a parameters cell that computes) is a ValueError.
"""

from __future__ import annotations

import argparse
import ast
import base64
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import yaml

from physid.claims import (
    PAPERS,
    Claim,
    claims_from_notebook,
    report_markdown,
    summary_line,
    write_claims,
)
from physid.scales import check_scale

#: The page whose staged copy receives the claim tables.
REPORT_DOCNAME = "book/report"
#: Parameters the runner injects into every notebook chapter.
PARAMETERS = ("SCALE", "SEED")

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ChapterError(RuntimeError):
    """A chapter's cell raised while the runner executed it."""


class BuildError(RuntimeError):
    """Sphinx (jupyter-book) reported a warning or an error."""


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
    """The result of executing one chapter."""

    page: Page
    notebook: Path
    seconds: float
    claims: list[Claim] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)


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
def _inline_matplotlib() -> Iterator[None]:
    """Give the kernel the inline backend, whatever ``MPLBACKEND`` the caller has set.

    Glued and displayed figures are PNG outputs only under the inline backend; a headless
    ``MPLBACKEND=Agg`` inherited by the kernel would silently drop them.
    """
    previous = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["MPLBACKEND"]
        else:
            os.environ["MPLBACKEND"] = previous


def execute_chapter(page: Page, scale: str, seed: int, build_dir: Path) -> ChapterRun:
    """Execute one notebook chapter with papermill into ``build_dir/executed``.

    Returns the executed notebook's path, the run time, the claims it recorded and the figures
    it glued (written to ``build_dir/figures/<chapter>/<name>.png``).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        check_scale(scale)
    except ValueError as error:
        raise ValueError(f"chapter {page.docname!r}: {error}") from None
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"chapter {page.docname!r}: SEED must be a non-negative int, got {seed!r}")
    nb = _read_notebook(page.path)
    if "kernelspec" not in nb.metadata:
        raise ValueError(f"chapter {page.docname!r} is not a notebook (it has no kernelspec)")
    parameters_cell(nb, page.docname)
    out = Path(build_dir) / "executed" / f"{page.docname}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        with _inline_matplotlib():
            papermill.execute_notebook(
                nb,
                str(out),
                parameters={"SCALE": scale, "SEED": seed},
                kernel_name=nb.metadata.kernelspec.name,
                cwd=str(page.path.parent),
                progress_bar=False,
            )
    except PapermillExecutionError as error:
        trace = _ANSI.sub("", "\n".join(error.traceback))
        raise ChapterError(
            f"chapter {page.docname!r} failed in cell {error.exec_count} "
            f"({error.ename}: {error.evalue}); executed notebook kept at {out}\n{trace}"
        ) from None
    seconds = time.perf_counter() - start
    executed = nbformat.read(out, as_version=4)
    figures = []
    figure_dir = Path(build_dir) / "figures" / Path(page.docname).name
    for name, png in _glued_figures(executed):
        figure_dir.mkdir(parents=True, exist_ok=True)
        path = figure_dir / f"{name}.png"
        path.write_bytes(png)
        figures.append(path)
    claims = claims_from_notebook(executed, page.docname)
    return ChapterRun(page=page, notebook=out, seconds=seconds, claims=claims, figures=figures)


def _hide_default_parameters(nb: Any) -> None:
    """Hide the chapter's own parameters cell: papermill's injected cell shows the values run."""
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]


def stage_book(
    root: Path,
    pages: Sequence[Page],
    runs: Sequence[ChapterRun],
    claims: Sequence[Claim],
    stage: Path,
) -> Path:
    """Lay out the book to build: the root's config, the executed chapters, the other pages.

    The staged ``_config.yml`` turns execution off (the chapters are already executed), and
    the staged report page ends with the claim tables of :func:`physid.claims.report_markdown`.
    """
    root, stage = Path(root), Path(stage)
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    (stage / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copy2(root / "_toc.yml", stage / "_toc.yml")
    for bib in config.get("bibtex_bibfiles", []):
        shutil.copy2(root / bib, stage / bib)
    executed = {run.page.docname: run.notebook for run in runs}

    for page in pages:
        target = stage / page.docname
        target.parent.mkdir(parents=True, exist_ok=True)
        if page.docname in executed:
            nb = nbformat.read(executed[page.docname], as_version=4)
            _hide_default_parameters(nb)
            nbformat.write(nb, target.with_suffix(".ipynb"))
        elif page.docname == REPORT_DOCNAME:
            text = page.path.read_text().rstrip() + "\n\n" + report_markdown(claims)
            target.with_suffix(".md").write_text(text)
        else:
            shutil.copy2(page.path, target.with_suffix(".md"))
    static = root / "book" / "_static"
    if static.is_dir():
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
    if html.exists():
        shutil.rmtree(html)
    log = Path(build_dir) / "jupyter-book.log"
    command = [
        _jupyter_book(), "build", str(stage), "--path-output", str(Path(build_dir).parent),
        "-W", "-n", "--keep-going",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        problems = [
            line for line in (result.stdout + result.stderr).splitlines()
            if "WARNING" in line or "ERROR" in line or "Error" in line
        ]  # fmt: skip
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
    """Everything one run of the book produced."""

    index: Path
    claims_path: Path
    runs: list[ChapterRun]
    claims: list[Claim]


def run_book(
    root: Path = Path("."), scale: str = "default", seed: int = 0, build_dir: Path | None = None
) -> BookRun:
    """Execute every chapter of ``root/_toc.yml`` at ``scale``, then build the HTML book."""
    from tqdm.auto import tqdm

    root = Path(root).resolve()
    build_dir = Path(build_dir).resolve() if build_dir else root / "_build"
    if build_dir.name != "_build":
        raise ValueError(f"build_dir must be a folder named _build, got {str(build_dir)!r}")
    pages = read_toc(root)
    chapters = [page for page in pages if page.is_notebook]
    runs = []
    with tqdm(chapters, desc=f"chapters ({scale})", unit="chapter") as bar:
        for page in bar:
            bar.set_postfix_str(page.docname)
            runs.append(execute_chapter(page, scale, seed, build_dir))
    claims = [claim for run in runs for claim in run.claims]
    claims_path = write_claims(claims, build_dir / "reproduction" / "claims.json")
    stage = stage_book(root, pages, runs, claims, build_dir / "source")
    index = build_html(stage, build_dir)
    return BookRun(index=index, claims_path=claims_path, runs=runs, claims=claims)


def summary(book: BookRun) -> str:
    """One screen: chapter times, where the HTML is, and the claims (which do not hold)."""
    lines = ["chapter times:"]
    lines += [f"  {run.seconds:7.1f} s  {run.page.docname}" for run in book.runs]
    lines += ["", f"HTML: {book.index}", f"claims: {book.claims_path}", summary_line(book.claims)]
    for source in PAPERS:
        group = [c for c in book.claims if c.source == source]
        if group:
            held = sum(c.holds for c in group)
            lines.append(f"  {source:<11} {held}/{len(group)} hold")
    for claim in book.claims:
        if not claim.holds:
            lines.append(f"  does not hold: {claim.id}: paper {claim.paper}, ours {claim.ours}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m physid.book", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--scale", default="default", help="quick, default or paper")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    try:
        book = run_book(args.root, args.scale, args.seed)
    except (ChapterError, BuildError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(summary(book))
    return 0


if __name__ == "__main__":
    sys.exit(main())
