# Two commands do all the set-up on a fresh machine:
#   make serve   -> the MCP server on the embedded default (stdio)
#   make test    -> the whole test suite (starts a Redis if none is running)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve serve-http test lint bench-latency bench-quality bench-queue clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/kioku serve

serve-http: $(STAMP)
	$(BIN)/kioku serve --http

test: $(STAMP)
	$(BIN)/pytest -q -ra

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench-latency: $(STAMP)
	$(BIN)/python bench/latency.py

bench-quality: $(STAMP)
	$(BIN)/python bench/quality/run.py

bench-queue: $(STAMP)
	$(BIN)/python bench/queue.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
