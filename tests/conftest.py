"""Shared fixtures: the repository root and one quick run of the whole book."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
