# Two commands do all the set-up on a fresh machine:
#   make serve   -> the MCP server on the embedded default (stdio)
#   make test    -> the fast test suite, then its wall time (tests start a private Redis)
#   make test-all-> everything: the fast suite, then the slow fault/load tests (what CI runs)
#
# `make serve` is launched by MCP clients: its stdout is the protocol channel, so nothing
# else may reach it. Recipes are silent (@), set-up output goes to stderr (>&2), and make
# never prints "Entering directory" (clients may call `make -C /path/to/kioku serve`).
MAKEFLAGS += --no-print-directory
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST := $(BIN)/pytest -q -ra --durations=10

.PHONY: serve serve-http test test-slow test-all lint bench-latency bench-quality bench-heldout bench-fresh bench-queue bench-learning clean

$(STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@$(BIN)/pip install --quiet -e ".[dev]" >&2
	@touch $(STAMP)

serve: $(STAMP)
	@$(BIN)/kioku serve

serve-http: $(STAMP)
	@$(BIN)/kioku serve --http

# The default set: everything not marked slow (target: <= 6 min on 2 cores).
test: $(STAMP)
	@start=$$(date +%s); status=0; $(PYTEST) -m "not slow" || status=$$?; \
	echo "make test: wall time $$(( $$(date +%s) - start )) s"; exit $$status

# The long fault and load tests (pytest -m slow).
test-slow: $(STAMP)
	@start=$$(date +%s); status=0; $(PYTEST) -m slow || status=$$?; \
	echo "make test-slow: wall time $$(( $$(date +%s) - start )) s"; exit $$status

# What CI runs (.ci/run): the fast set, then the slow set.
test-all: test test-slow

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench-latency: $(STAMP)
	$(BIN)/python bench/latency.py

# Both distributions (generated data/ and conversational conv/), per split and kind, 95% CIs.
bench-quality: $(STAMP)
	$(BIN)/python bench/quality/run.py

# The held-out set: written apart from the tuned one, reported only, never tuned on.
bench-heldout: $(STAMP)
	$(BIN)/python bench/quality/run.py --data bench/quality/heldout

# a memory that gets better with use (issue 49): simulated weeks, learning off vs on
bench-learning: $(STAMP)
	$(BIN)/python bench/quality/learning.py

# Quality right after a 500-note burst, through the real server (+0 s and +10 s; ~15 min).
bench-fresh: $(STAMP)
	$(BIN)/python bench/quality/fresh_server.py

bench-queue: $(STAMP)
	$(BIN)/python bench/queue_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
