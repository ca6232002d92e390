# Two set-up commands: `make demo` and `make test`. Each builds .venv itself.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m bench.demo

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

test: lint
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(PY) -m bench.run

clean:
	rm -rf $(VENV) build *.egg-info
