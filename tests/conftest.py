"""Shared fixtures: the repository root and one quick run of the whole book."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]

#: Set to a ``_build`` folder that a quick run of the book left, the book tests check that
#: build instead of running the book again (for working on the checks; CI never sets it).
REUSE_BUILD = "PHYSID_REUSE_QUICK_BUILD"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def _reuse(build_dir: Path):
    import nbformat

    from physid.book.claims import claims_from_notebook
    from physid.book.runner import BookRun, ChapterRun, read_toc

    runs = []
    for page in read_toc(ROOT):
        notebook = build_dir / "executed" / f"{page.docname}.ipynb"
        if notebook.is_file():
            nb = nbformat.read(notebook, as_version=4)
            figures = sorted((build_dir / "figures" / Path(page.docname).name).glob("*.png"))
            claims = claims_from_notebook(nb, page.docname)
            runs.append(ChapterRun(page, notebook, nb.metadata.papermill.duration, claims, figures))
    claims = [claim for run in runs for claim in run.claims]
    index = build_dir / "html" / "index.html"
    return BookRun(index, build_dir / "reproduction" / "claims.json", runs, claims)


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory):
    """Every chapter of ``_toc.yml`` at ``SCALE="quick"`` through the runner, and the build."""
    from physid.book.runner import run_book

    if os.environ.get(REUSE_BUILD):
        return _reuse(Path(os.environ[REUSE_BUILD]))
    build_dir = tmp_path_factory.mktemp("book") / "_build"
    return run_book(ROOT, scale="quick", seed=0, build_dir=build_dir)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny batched LAPACK calls are far faster on one thread on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def float64_default():
    """float64 as torch's default dtype for one module, restored after it."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)
