# Two entry points (see README): `make run` and `make test`. Both create the virtual
# environment on first use and (re)install when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run docs test lint typecheck unit native clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# Bytecode written once here, as pip does for a regular install: the commands start
	@# faster (kafkaspec --help 0.1 s) even where PYTHONDONTWRITEBYTECODE forbids writing it later.
	$(BIN)/python -m compileall -q -j 0 kafkaspec spark_checks spec reference impl conformance
	@# The spec compiled to C with mypyc, which the model checker runs 2.5-3x faster (about 3
	@# minutes of gcc on 2 cores; skipped while a build of the same source exists). Without a C
	@# compiler or Python's headers the install still succeeds, and the interpreted source runs.
	@$(BIN)/python -m kafkaspec.native --if-stale > $(VENV)/native-build.log 2>&1 \
		&& tail -n 1 $(VENV)/native-build.log \
		|| echo "kafkaspec: the spec was not compiled (no C compiler or Python headers? see" \
			"$(VENV)/native-build.log): the interpreted source runs, 2.5-3x slower"
	@touch $(STAMP)

## The compiled spec (kafkaspec/native.py, spec/_compiled.py; with it the spark_checks modules
## in spec._compiled.ALSO_COMPILED), rebuilt: after an edit to them the source runs until then
## (a stale build is never used). Installing builds it once. When only sources are newer,
## --if-stale keeps a build whose compiled source is unchanged (files touched by git, or a
## spark_checks module that is not compiled) and records their new stats, so that `import spec`
## checks the build cheaply again.
NATIVE := build/native/manifest.json
native: $(NATIVE)

$(NATIVE): kafkaspec/native.py $(shell find spec spark_checks -name '*.py') | $(STAMP)
	$(BIN)/python -m kafkaspec.native $(if $(filter kafkaspec/native.py,$?),,--if-stale)

## The main job: model-check every named scenario against its expected outcome, then build
## the documentation site from the same findings (generated from the spec; its last line says
## where it is), so no scenario is checked twice. The site is built even when an outcome is
## not the expected one (its pages show which); the exit status is then check's.
run: $(STAMP)
	$(BIN)/kafkaspec check --all --docs build/docs

## The documentation site alone: build/docs/index.html.
docs: $(STAMP)
	$(BIN)/kafkaspec docs --out build/docs

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict spec reference impl conformance spark_checks kafkaspec tests bench

unit: $(STAMP)
	$(BIN)/python -m pytest

## Everything CI runs: lint, strict typing, then the whole test suite.
test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build/native
