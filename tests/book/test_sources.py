"""Source hygiene: MyST chapters, jupytext headers, literal parameters, one dependency list."""

from __future__ import annotations

import re
import subprocess
import tomllib

import jupytext
import pytest
import yaml

from physid.book.runner import parameters_cell, read_toc
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


def test_every_module_has_its_api_section():
    """Each module of physid is documented under its own heading on one of the API pages."""
    import pkgutil

    import physid

    modules = {
        info.name
        for info in pkgutil.walk_packages(physid.__path__, "physid.")
        if not info.ispkg
    }
    pages = "\n".join(p.read_text() for p in (ROOT / "book").glob("api_*.md"))
    documented = set(re.findall(r"\.\. physid-module:: (\S+)", pages))
    headings = set(re.findall(r"^## `(physid[\w.]+)`$", pages, re.MULTILINE))
    assert modules - documented == set(), "modules missing from the API pages"
    assert documented <= headings, "every documented module has its own heading"
    assert documented - modules == set(), "API pages name modules that do not exist"


def test_pinned_browser_libraries_match_the_config():
    """_config.yml loads MathJax and the widget manager from the vendored copies."""
    from physid.book.vendor import VENDOR

    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    names = {package.name for package in VENDOR}
    assert sphinx["mathjax_path"].split("/")[:2] == ["vendor", "mathjax"]
    for path in [sphinx["mathjax_path"], *sphinx["nb_ipywidgets_js"]]:
        assert "://" not in path
        assert path.split("/")[1] in names if path.startswith("vendor/") else (
            ROOT / "book" / "_static" / path
        ).is_file()


def test_one_version_in_the_library_the_changelog_and_the_citation():
    import physid

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    changelog = re.search(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert physid.__version__ == project["version"] == changelog.group(1) == citation["version"]
    assert citation["cff-version"] == "1.2.0" and citation["license"] == project["license"]
    titles = {ref["title"] for ref in citation["references"]}
    bib = (ROOT / "references.bib").read_text()
    for key in ("song2020identifying", "heiden2022probabilistic", "zhong2021extending"):
        title = re.search(rf"@\w+\{{{key},.*?title\s*=\s*\{{(.*?)\}},\n", bib, re.S).group(1)
        assert title.replace("{", "").replace("}", "") in titles
