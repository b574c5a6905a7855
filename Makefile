PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run test lint bench e2e clean refresh-data

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The demo needs the package alone (no extra): `make run` does not install the dev tools.
$(RUN_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/agentstream run "Explain how rainbows form"

test: $(STAMP)
	bash scripts/test-services.sh
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check --quiet src tests bench
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check --quiet src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

.PHONY: docs
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@echo "docs: open .cache/site/index.html"

e2e: $(STAMP)
	bash scripts/e2e.sh

refresh-data:
	bash scripts/refresh-shared-data.sh

clean:
	rm -rf $(VENV) .cache
