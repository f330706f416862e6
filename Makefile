# One-command entry points. Each target creates .venv and installs into it when needed.
SCALE ?= default
SEED ?= 0
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VENDOR := book/_static/vendor

.PHONY: setup vendor book test bench lint clean distclean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[book,test]'
	touch $(STAMP)

setup: $(STAMP)

# MathJax, require.js and the ipywidgets HTML manager, pinned npm packages that the pages load
# from the book itself so that they work offline (needs npm once; physid.book.VENDOR).
vendor: $(STAMP)
	$(PY) -m physid.book --fetch-vendor

book: vendor
	$(PY) -m physid.book --scale $(SCALE) --seed $(SEED)

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests benchmarks

# The browser test (tests/test_browser.py) needs Debian's chromium and chromium-driver.
test: lint vendor
	$(PY) -m pytest

BENCHMARKS := $(wildcard benchmarks/*.py)

bench: $(STAMP)
	@set -e; for script in $(BENCHMARKS); do echo "== $$script"; $(PY) $$script; done

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENDOR)
