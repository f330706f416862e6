# One-command entry points. Each target creates .venv and installs into it when needed.
SCALE ?= default
SEED ?= 0
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup book test bench lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[book,test]'
	touch $(STAMP)

setup: $(STAMP)

book: $(STAMP)
	$(PY) -m physid.book --scale $(SCALE) --seed $(SEED)

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests benchmarks

test: lint
	$(PY) -m pytest

BENCHMARKS := $(wildcard benchmarks/*.py)

bench: $(STAMP)
	@set -e; for script in $(BENCHMARKS); do echo "== $$script"; $(PY) $$script; done

clean:
	rm -rf _build
