# One-command entry points. Each target creates .venv and installs into it when needed.
SCALE ?= default
SEED ?= 0
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VENDOR := book/_static/vendor

.PHONY: setup vendor data book test bench lint clean distclean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[book,test]'
	touch $(STAMP)

setup: $(STAMP)

# MathJax, require.js and the ipywidgets HTML manager, pinned npm packages that the pages load
# from the book itself so that they work offline (needs npm once; physid.book.vendor.VENDOR).
vendor: $(STAMP)
	$(PY) -m physid.book --fetch-vendor

# The IBM double-pendulum marker tracks of Part II (physid.inference.ibm): a link to the shared
# copy when there is one, else where to get them. The book runs without them (on a simulated
# stand-in, which it says).
IBM_DATA := data/ibm-double-pendulum
IBM_SHARED := ../shared/data/ibm-double-pendulum
IBM_SOURCE := https://github.com/erwincoumans/tiny-differentiable-simulator

data:
	@if [ -e $(IBM_DATA) ]; then \
		echo "$(IBM_DATA) is in place"; \
	elif [ -L $(IBM_DATA) ]; then \
		echo "$(IBM_DATA) is a broken link: remove it and run make data again"; \
	elif [ -d $(IBM_SHARED) ]; then \
		ln -s "$$(cd $(IBM_SHARED) && pwd)" $(IBM_DATA) && \
		echo "linked $(IBM_DATA) -> $$(cd $(IBM_SHARED) && pwd)"; \
	else \
		echo "The IBM double-pendulum data (CDLA-Sharing-1.0) are not here. The public copy is"; \
		echo "the folder data/ibm-double-pendulum/original/dpc_dataset_csv/ of $(IBM_SOURCE)"; \
		echo "(runs 0-20; the licence is data/ibm-double-pendulum/LICENSE.pdf there)."; \
		echo "Put the files in $(IBM_DATA)/original/ as <run>.csv (0.csv, 1.csv, ...),"; \
		echo "or set PHYSID_IBM_DATA to the folder holding them."; \
	fi

book: vendor data
	$(PY) -m physid.book --scale $(SCALE) --seed $(SEED)

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests benchmarks

# The browser test (tests/book/test_browser.py) needs Debian's chromium and chromium-driver.
test: lint vendor
	$(PY) -m pytest

BENCHMARKS := $(wildcard benchmarks/*.py)

bench: $(STAMP)
	@set -e; for script in $(BENCHMARKS); do echo "== $$script"; $(PY) $$script; done

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENDOR)
