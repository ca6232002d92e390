# Two set-up commands: `make demo` and `make test`. Each builds .venv itself, with what it
# needs: the demo the serve and mcp extras only, the tests the dev extra. Separate stamps,
# so one never undoes or repeats the other.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.installed-demo
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test test-all lint oracle bench clean upstream mutation

$(PY):
	@echo "== creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# pip's own progress shows: a first install takes a while
$(DEMO_STAMP): pyproject.toml | $(PY)
	@echo "== installing vivary-git with the serve and mcp extras into $(VENV)"
	$(PY) -m pip install --progress-bar on -e '.[serve,mcp]'
	touch $@

$(DEV_STAMP): pyproject.toml | $(PY)
	@echo "== installing vivary-git with the dev extra into $(VENV)"
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

demo: $(DEMO_STAMP)
	$(PY) -m bench.demo

lint: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

# The oracle of the parity tests, from the package index when it can be reached. Without
# it `make test` goes on: those tests skip, and the run's last lines say what is missing.
oracle:
	@$(MAKE) --no-print-directory upstream || echo "make test: could not install the oracle suite (is the package index reachable?); its parity tests skip: retry with \`make upstream\`"

# loadgroup: tests/test_wheel.py builds one wheel and one venv, on one worker.
# `make test` is the everyday loop: it leaves out the slow tier (kill -9 campaigns, parity
# corpora against the oracle, the browser, the wheel), which `CI=true make test` and
# `make test-all` run too (docs/testing.md, "Two tiers").
# The everyday tier waits a lot (subprocesses, polls, grace periods): a third worker fills
# the two cores meanwhile (6:13 -> 5:13 of pytest on a quiet machine). CI keeps two.
CI_RUN := $(filter 1 true True TRUE yes Yes YES,$(CI))
TIER := $(if $(CI_RUN),-n 2,-n 3 -m "not slow")
# pytest keeps each test module with its asserts rewritten in __pycache__, unless
# PYTHONDONTWRITEBYTECODE is set (many containers and CI images set it): then every xdist
# worker rewrites and compiles all 400 test modules again, about 8 s of CPU each run.
# The suite's runs write their bytecode whatever that says (empty is unset for Python).
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=
test: lint oracle
	$(KEEP_BYTECODE) $(PY) -m pytest -q $(TIER) --dist loadgroup

test-all: lint oracle
	$(KEEP_BYTECODE) $(PY) -m pytest -q -n 2 --dist loadgroup

bench: $(DEV_STAMP)
	$(PY) -m bench.run

# Mutation testing (docs/testing.md): slow, so never part of `make test`; one worker at
# the lowest priority. MUTANTS picks mutants by name glob, e.g. the guard after a change:
#   make mutation MUTANTS='strato.guard.*'
MUTANTS ?=
mutation: $(DEV_STAMP)
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
