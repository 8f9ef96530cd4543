# Cairn developer commands. `make test` is what CI runs (.ci/run).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP_TEST := $(VENV)/.installed-test
STAMP_BASE := $(VENV)/.installed
COVERAGE_MIN := 90
# Coverage is measured by path: naming packages (--cov=cairn.graph) makes coverage import
# cairn, and with it numpy, before pytest starts, which numpy refuses to survive.
GATED := src/cairn/graph/*,src/cairn/canonical.py

.PHONY: test demo bench lint types clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP_BASE): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(STAMP_TEST): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@ $(STAMP_BASE)

lint: $(STAMP_TEST)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

types: $(STAMP_TEST)
	$(BIN)/mypy --strict src

test: lint types
	$(BIN)/pytest --cov=src/cairn --cov-report=
	$(BIN)/coverage report
	$(BIN)/coverage report --include='$(GATED)' --fail-under=$(COVERAGE_MIN)

demo: $(STAMP_BASE)
	$(BIN)/cairn demo .

bench: $(STAMP_BASE)
	$(BIN)/python bench/topology_bench.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python bench/store_bench.py
	OPENBLAS_NUM_THREADS=1 $(BIN)/python bench/search_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage
