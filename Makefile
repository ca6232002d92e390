# Two set-up commands: `make demo` and `make test`. Each builds .venv itself.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean upstream mutation

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

# Mutation testing (docs/testing.md): slow, so never part of `make test`; one worker at
# the lowest priority. MUTANTS picks mutants by name glob, e.g. the guard after a change:
#   make mutation MUTANTS='strato.guard.*'
MUTANTS ?=
mutation: $(STAMP)
	$(PY) -m pip install -q -e '.[dev,mutation]'
	VIVARY_UPSTREAM=$${VIVARY_UPSTREAM:-$(CURDIR)/.upstream} nice -n 19 $(VENV)/bin/mutmut run --max-children 1 $(MUTANTS)
	$(VENV)/bin/mutmut results

# The published Vivary suite in its own virtualenv: an oracle for formats and speed.
upstream: .upstream/.installed
.upstream/.installed:
	$(PYTHON) -m venv .upstream
	.upstream/bin/pip install -q vivary-tropo==0.5.4 vivary-strato==0.1.3 vivary-core==0.2.7 vivary-exo==0.3.1 create-vivary==0.4.3
	# the suite's `vivary` front door itself (its ozone review packs are not needed by the parity tests)
	.upstream/bin/pip install -q --no-deps vivary==0.2.0
	touch .upstream/.installed
	# create-vivary 0.3.x (full scaffolds) for doctor's compatibility test; optional.
	$(PYTHON) -m venv .upstream03 && .upstream03/bin/pip install -q 'create-vivary==0.3.*' \
		|| echo "warning: create-vivary 0.3.x not installable; its compatibility test will skip"

clean:
	rm -rf $(VENV) .upstream .upstream03 build *.egg-info mutants
