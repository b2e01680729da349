# Spotline developer commands. Each target sets up what it needs first (the .venv).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY313 := $(shell scripts/find-python313 2>/dev/null)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The checkpoint example trains a tiny PyTorch model. The CPU torch wheel these machines carry
# (/opt/wheels) is for Python 3.11 (PyPI's 3.13 torch is a multi-GB CUDA build), so the
# example has its own environment; the spotline package and the Lambdas stay on 3.13.
PY311 := $(shell for p in "$$(command -v python3.11)" "$$HOME"/.pyenv/versions/3.11*/bin/python3.11 /usr/bin/python3.11; do \
  [ -x "$$p" ] && "$$p" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null && { echo "$$p"; break; }; done)
EXAMPLE_VENV := .venv-example
EXAMPLE_STAMP := $(EXAMPLE_VENV)/.installed
# checkov pins boto3/botocore far below what Batch service jobs need: its own environment.
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
# sam build needs python3.13 on PATH; SAM and AWS clients must never reach AWS from here.
export PATH := $(abspath $(BIN)):$(dir $(PY313)):$(PATH)
export SAM_CLI_TELEMETRY := 0
export AWS_DEFAULT_REGION ?= us-east-1
# The spot traces `make bench` replays, read in place from the shared data next to the
# repository; elsewhere: make bench TRACES=DIR PAPER_TRACES=DIR (a missing folder is skipped).
TRACES ?= $(abspath ../shared/data/spot-availability)
PAPER_TRACES ?= $(abspath ../shared/data/spot-traces/availability/1-node)

.PHONY: help venv lock example-venv checkov-venv lint typecheck architecture template checkov build docs docs-build unit unit-fast test sandbox bench asl clean

help:
	@echo "make venv      create .venv (Python 3.13) with every package of uv.lock (uv sync)"
	@echo "make lock      after a dependency change in pyproject.toml: uv.lock and the layer's requirements.txt"
	@echo "make test      lint, typecheck, template checks, checkov, sam build, pytest (what CI runs)"
	@echo "make sandbox   run the whole system locally on embedded stand-ins"
	@echo "make unit-fast the unit tests alone (no local stack, no scenario, no contract): the loop while coding"
	@echo "make lint      ruff;  make typecheck: mypy;  make template: cfn-lint + sam validate --lint"
	@echo "make architecture  import-linter: the core stays pure, the layer never imports devtools, concept packages and devtools products in layers, no import cycles"
	@echo "make docs      serve the documentation site (mkdocs) at http://127.0.0.1:8000; make docs-build: build it (strict)"
	@echo "make checkov   checkov on template.yaml (its own .venv-checkov); every skip and its reason in .checkov.yaml"
	@echo "make build     sam build (arm64, python3.13)"
	@echo "make asl       write statemachines/*.asl.json from their Python (devtools/spotline_dev/asl)"
	@echo "make example-venv  .venv-example (Python 3.11 + CPU torch) for examples/train_tiny.py"
	@echo "make bench     print the benchmark figures (history events, transitions, cost)"

# The environment is what uv.lock says (pyproject.toml's dependency groups, every transitive
# release pinned), installed by uv: uv itself comes from PyPI into the new .venv first, at the
# version the dev group pins. --locked: a lock that no longer matches pyproject.toml is an error
# (run `make lock`), never silently re-resolved. --compile-bytecode, as pip does: otherwise each
# import compiles anew on machines that set PYTHONDONTWRITEBYTECODE, printing the SyntaxWarnings of
# the packages' docstrings (sagemaker-core has many) into what commands print.
UV := $(BIN)/uv
UV_VERSION := $(shell sed -n 's/^ *"uv==\([0-9.]*\)",*$$/\1/p' pyproject.toml)
export UV_LINK_MODE := copy
export UV_PYTHON_DOWNLOADS := never

$(UV):
	@test -n "$(PY313)" || { scripts/find-python313; exit 1; }
	@test -x $(BIN)/python || $(PY313) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)

$(STAMP): pyproject.toml uv.lock | $(UV)
	@echo "Setting up $(VENV): Python 3.13 and every package of uv.lock"
	$(UV) sync --locked --compile-bytecode --quiet --python $(BIN)/python
	@touch $@

venv: $(STAMP)

# After changing a dependency in pyproject.toml: resolve again (uv keeps every other locked release)
# and export the layer group to the file `sam build` reads.
lock: | $(UV)
	$(UV) lock
	$(UV) export --frozen --only-group layer --no-emit-project --no-hashes --output-file layers/spotline/requirements.txt --quiet

$(EXAMPLE_STAMP): requirements-example.txt
	@test -n "$(PY311)" || { echo "error: Python 3.11 not found (the CPU torch wheel in /opt/wheels is cp311)" >&2; exit 1; }
	@test -x $(EXAMPLE_VENV)/bin/python || $(PY311) -m venv $(EXAMPLE_VENV)
	$(EXAMPLE_VENV)/bin/python -m pip install --quiet -r requirements-example.txt
	@touch $@

example-venv: $(EXAMPLE_STAMP)

$(CHECKOV_STAMP): requirements-checkov.txt
	@test -n "$(PY313)" || { scripts/find-python313; exit 1; }
	@test -x $(CHECKOV_VENV)/bin/python || $(PY313) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet -r requirements-checkov.txt
	@touch $@

checkov-venv: $(CHECKOV_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

architecture: $(STAMP)
	$(BIN)/lint-imports --no-cache

template: $(STAMP)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint

# .checkov.yaml: what checkov scans, and every skip with its reason, so any new finding fails the build.
checkov: $(CHECKOV_STAMP)
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov.yaml

build: $(STAMP)
	$(BIN)/sam build

# The project's own modules, byte-compiled ahead (compileall writes even where the environment
# sets PYTHONDONTWRITEBYTECODE): a replay imports every handler inside its timed run.
BYTECODE := $(BIN)/python -m compileall -q layers/spotline/spotline devtools/spotline_dev functions

# Across every core (pytest-xdist; each worker its own process, so moto's state is its own);
# worksteal keeps both busy to the end, where the long end-to-end cases are.
unit: $(STAMP) $(EXAMPLE_STAMP)
	@$(BYTECODE)
	$(BIN)/pytest --numprocesses=auto --dist=worksteal

# The fast loop: the tests marked unit (tests/kinds.py marks every test by kind).
unit-fast: $(STAMP) $(EXAMPLE_STAMP)
	$(BIN)/pytest -m unit --numprocesses=auto --dist=worksteal

# The documentation site (docs/, mkdocs.yml). --strict: a broken link, anchor or page missing
# from the nav fails the build. (Material 9.8 prints a notice about MkDocs 2.0 on every build.)
docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# The state machine files are generated: change devtools/spotline_dev/asl, then make asl, and
# commit both (tests/statemachines/test_asl_build.py holds the files to a fresh build).
asl: $(STAMP)
	$(BIN)/python -m spotline_dev.asl

test: lint typecheck architecture template checkov build docs-build unit

sandbox: $(STAMP)
	@$(BYTECODE)
	$(BIN)/spotline sandbox

# $(call simulate_traces,DIR,VARIABLE,OPTIONS): spotline simulate on DIR, or why not.
simulate_traces = if [ -d "$(1)" ]; then echo "$(BIN)/spotline simulate --traces $(1) $(3)"; \
  $(BIN)/spotline simulate --traces "$(1)" $(3); \
  else echo "bench: skipped spotline simulate: no spot traces at $(1) (set $(2)=DIR)"; fi

bench: $(STAMP)
	@$(BYTECODE)
	$(BIN)/python benchmarks/state_cost.py
	$(BIN)/python benchmarks/lifecycle_72h.py
	$(BIN)/python benchmarks/history_worst_case.py
	$(BIN)/python benchmarks/handler_import_time.py
	$(BIN)/python benchmarks/team_registry.py
	$(BIN)/python benchmarks/fleet_week.py
	$(BIN)/python benchmarks/fleet_week.py benchmarks/fleet-month.yaml
	$(BIN)/python benchmarks/scoring_nights.py
	$(BIN)/python benchmarks/permission_check.py
	$(BIN)/python benchmarks/burst.py
	@$(call simulate_traces,$(TRACES),TRACES,)
	@$(call simulate_traces,$(PAPER_TRACES),PAPER_TRACES,--no-plot)
	@$(call simulate_traces,$(PAPER_TRACES),PAPER_TRACES,--regions --no-plot --out out/simulate-regions)

clean:
	rm -rf .aws-sam $(VENV) $(EXAMPLE_VENV) $(CHECKOV_VENV)
