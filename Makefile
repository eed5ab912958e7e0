# Two commands do all the set-up on a fresh machine:
#   make serve   -> the MCP server on the embedded default (stdio); installs what serving
#                   needs and nothing else
#   make test    -> adds the dev tools, runs the fast test suite, then prints its wall time
#                   and CPU seconds (tests start a private Redis)
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
DEV    := $(VENV)/.installed-dev
PYTEST := $(BIN)/pytest -q -ra --durations=10
CLOCK  := $(BIN)/python bench/clocked.py

.PHONY: serve serve-http test test-slow test-all lint bench-latency bench-quality bench-heldout bench-fresh bench-queue bench-scale bench-learning clean

# The bytecode of what a server and the CLI import (~12 MB), written once here: where the
# environment sets PYTHONDONTWRITEBYTECODE (this project's machines do), nothing else
# writes it, and every `kioku` process would compile each of its ~1,650 modules again
# (1-3 s of CPU before an editor's first answer). Importing only defines things.
SERVING_IMPORTS := import mcp_gateway.cli.main, mcp_gateway.daemon.owner, \
    mcp_gateway.daemon.stdio_proxy, mcp_gateway.services.app, mcp_gateway.embedders.local, \
    mcp_gateway.ui.routes, mcp_gateway.protocol.grant_gate, onnxruntime, qdrant_edge

# Serving: kioku and its runtime dependencies only (no dev tools, no opt-in extras).
# Editable, so a pulled or edited checkout serves its own code. setuptools reports every
# editable install with a boxed "Editable installation" notice on stderr that asks
# nothing of the user: that one message is silenced. --no-compile: no bytecode for the
# ~50 MB of dependency modules a server never imports (Python compiles what it imports).
$(STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@PYTHONWARNINGS="ignore:Editable installation" \
	    $(BIN)/pip install --quiet --no-compile -e . >&2
	@PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "$(SERVING_IMPORTS)" >&2
	@touch $(STAMP)

# The dev tools (pytest, ruff, mypy, selenium, the optional backends' clients) on top,
# in the same venv: only the targets that test, lint or bench need them.
$(DEV): $(STAMP)
	@PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e ".[dev]" >&2
	@touch $(DEV)

serve: $(STAMP)
	@$(BIN)/kioku serve

serve-http: $(STAMP)
	@$(BIN)/kioku serve --http

# The default set: everything not marked slow (target: <= 6 min on 2 cores), spread
# over one pytest worker per core (pytest-xdist; at most 4): alone, one pytest process
# keeps one core busy and leaves the other idle. Each worker has its own session
# fixtures (PostgreSQL database, Redis server, graph cache, temp dirs).
# The CPU (user+sys of pytest and its children) is what grows with the project; the
# wall time on a shared machine mostly measures the load (bench/clocked.py).
WORKERS ?= -n auto --maxprocesses 4
test: $(DEV)
	@$(CLOCK) "make test" $(PYTEST) $(WORKERS) -m "not slow"

# The long fault and load tests (pytest -m slow).
test-slow: $(DEV)
	@$(CLOCK) "make test-slow" $(PYTEST) -m slow

# What CI runs (.ci/run): the fast set, then the slow set.
test-all: test test-slow

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench-latency: $(DEV)
	$(BIN)/python bench/latency.py

# Every distribution (generated data/, conversational conv/, held-out heldout/, and any
# folder in QUALITY_EXTRA, e.g. bench/quality/nomatch for the out-of-scope set), per split
# and kind, 95% CIs; the default's hybrid beside the previous release's (channels off), paired.
QUALITY_EXTRA ?=
bench-quality: $(DEV)
	$(BIN)/python bench/quality/run.py --data bench/quality/data bench/quality/conv \
		bench/quality/heldout $(QUALITY_EXTRA) --previous 'embedder.channels=[]'

# The held-out set: written apart from the tuned one, reported only, never tuned on.
bench-heldout: $(DEV)
	$(BIN)/python bench/quality/run.py --data bench/quality/heldout

# a memory that gets better with use (issue 49): simulated weeks, learning off vs on
bench-learning: $(DEV)
	$(BIN)/python bench/quality/learning.py

# Quality right after a 500-note burst, through the real server (+0 s and +10 s; ~15 min).
bench-fresh: $(DEV)
	$(BIN)/python bench/quality/fresh_server.py

bench-queue: $(DEV)
	$(BIN)/python bench/queue_bench.py

# PostgreSQL + Redis + a worker + two gateways at growing sizes: ingest, memory, join
# (bench/scale_join.py). --preload writes all but the last 2,000 notes of each size
# through the stores with pooled real vectors (bench/scale_preload.py); SCALE_ARGS=
# --baseline (and no --preload) adds everything over HTTP and a B built from the feed
SIZES ?= 10000,50000,100000
SCALE_ARGS ?= --preload
bench-scale: $(DEV)
	$(BIN)/python bench/scale_join.py --sizes $(SIZES) $(SCALE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
