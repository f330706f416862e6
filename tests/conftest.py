"""Shared fixtures: the repository root and one quick run of the whole book."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory):
    """Every chapter of ``_toc.yml`` at ``SCALE="quick"`` through the runner, and the build."""
    from physid.book import run_book

    build_dir = tmp_path_factory.mktemp("book") / "_build"
    return run_book(ROOT, scale="quick", seed=0, build_dir=build_dir)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny batched LAPACK calls are far faster on one thread on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
