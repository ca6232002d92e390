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
# The stamp names what is in it: an oracle made before vivary-ozone joined gets it added.
UPSTREAM_STAMP := .upstream/.installed-ozone
upstream: $(UPSTREAM_STAMP)
$(UPSTREAM_STAMP):
	$(PYTHON) -m venv .upstream
	# vivary-ozone 0.3.2 (the review packs' oracle) needs only vivary-core and vivary-tropo,
	# already pinned here: it installs with its dependencies and moves none of them
	.upstream/bin/pip install -q vivary-tropo==0.5.4 vivary-strato==0.1.3 vivary-core==0.2.7 vivary-exo==0.3.1 create-vivary==0.4.3 vivary-ozone==0.3.2
	# the suite's `vivary` front door itself
	.upstream/bin/pip install -q --no-deps vivary==0.2.0
	touch $(UPSTREAM_STAMP)
	# create-vivary 0.3.x (full scaffolds) for doctor's compatibility test; optional.
	$(PYTHON) -m venv .upstream03 && .upstream03/bin/pip install -q 'create-vivary==0.3.*' \
		|| echo "warning: create-vivary 0.3.x not installable; its compatibility test will skip"

clean:
	rm -rf $(VENV) .upstream .upstream03 build *.egg-info mutants
