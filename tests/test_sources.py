"""Source hygiene: MyST chapters, jupytext headers, literal parameters, one dependency list."""

from __future__ import annotations

import subprocess
import tomllib

import jupytext
import pytest
import yaml

from physid.book import parameters_cell, read_toc
from tests.conftest import ROOT

PAGES = read_toc(ROOT)
CHAPTERS = [page for page in PAGES if page.is_notebook]


def test_no_notebook_files_are_committed_under_book():
    tracked = subprocess.run(
        ["git", "ls-files", "book"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [f for f in tracked if f.endswith(".ipynb")]
    assert not list((ROOT / "book").rglob("*.ipynb"))


def test_the_book_has_chapters_and_a_report():
    assert CHAPTERS, "no notebook chapter in _toc.yml"
    assert "book/report" in [p.docname for p in PAGES]


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.docname)
def test_chapter_has_jupytext_header_and_literal_parameters(page):
    nb = jupytext.read(page.path)
    assert nb.metadata["jupytext"]["text_representation"]["format_name"] == "myst"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    values = parameters_cell(nb, page.docname)
    assert set(values) == {"SCALE", "SEED"}
    assert values["SCALE"] == "default"


def test_environment_yml_lists_the_pyproject_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    expected = project["dependencies"] + extras["book"] + extras["test"]
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    (pip_section,) = [d["pip"] for d in environment["dependencies"] if isinstance(d, dict)]
    assert [d for d in pip_section if d != "-e ."] == expected
    assert "python=3.11" in environment["dependencies"]
