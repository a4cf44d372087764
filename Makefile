# The two commands of the README: `make run` starts Clarion on the embedded default,
# `make test` runs the whole suite (lint, types, layer rules, tests). Both install
# what they need from uv.lock into .venv first.
PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin
# Most tests wait on real processes and sockets, so more workers than cores pays off, up to the
# point where the cores are busy all along: then each worker's own start and collection is what
# one more costs. A clean clone's `.ci/run` of one commit on an idle 2-core machine took 581 s
# with eight workers and 565 s with six, the cores 98% busy (CONTRIBUTING.md, "Test it").
PYTEST_WORKERS ?= 6

NPM ?= npm
TSC := node_modules/.bin/tsc

# The checks run side by side (the linters, and the published agents' `npm ci` before the
# tests), each one's output printed whole when it ends. Only the checks: `make run`, the tests
# and the bench print as they go.
LINTERS := lint-ruff lint-types lint-layers lint-deps lint-js
SIDE_BY_SIDE := --jobs=4 --output-sync=target

.PHONY: run test lint $(LINTERS) install bench browser agents collect

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE is set, every `clarion serve`
# would otherwise compile its imports again (about a second of each start on 2 cores).
$(BIN)/clarion: $(UV) uv.lock pyproject.toml
	UV_PYTHON=$(PYTHON) $(UV) sync --frozen --quiet --compile-bytecode
	$(BIN)/python -m compileall -q src
	@touch $@

install: $(BIN)/clarion

# TypeScript, which type-checks the web UI's JavaScript, from package-lock.json. Without npm or
# the registry this fails, and so does `make lint`: the check is never skipped.
$(TSC): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

run: install
	$(BIN)/clarion serve

lint:
	@$(MAKE) --no-print-directory $(SIDE_BY_SIDE) $(LINTERS)

lint-ruff: install
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts

lint-types: install
	$(BIN)/mypy

lint-layers: install
	$(BIN)/lint-imports

lint-deps: install
	$(BIN)/deptry src bench

lint-js: $(TSC)
	$(TSC) -p jsconfig.json

# The published ACP agents the end-to-end tests in tests/published drive (docs/agents.md), pinned
# by agents/published/package-lock.json. A failed install does not stop the suite here: those
# tests then skip, or fail when CI or CLARION_REQUIRE_SERVICES is set, like the other services.
PUBLISHED := agents/published
$(PUBLISHED)/node_modules/.installed: $(PUBLISHED)/package.json $(PUBLISHED)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  (cd $(PUBLISHED) && npm ci --ignore-scripts --no-audit --no-fund --no-update-notifier --loglevel=error) \
	    && touch $@ || echo "warning: npm ci in $(PUBLISHED) failed; its tests will skip or fail" >&2; \
	else echo "warning: npm not found; the published-agent tests will skip or fail" >&2; fi

agents: $(PUBLISHED)/node_modules/.installed

# One collection before the workers start, beside the checks (mypy, the longest, keeps one core
# busy): it writes the test modules' rewritten bytecode, which the workers then read instead of
# each rewriting every module at once. In a clean clone eight collections side by side took
# 49 s of wall time without it and 33 s with it, on 2 cores. Nothing is run; a module that does not
# import fails here, as it would in the workers.
collect: install
	@out=$$(PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest --collect-only -q -p no:cacheprovider \
	  $(PYTEST_ARGS) 2>&1) && echo "$$out" | tail -n 1 || { echo "$$out"; exit 1; }

# The published agents are installed for a full run, or for a narrowed one that runs their tests.
TEST_NEEDS := collect $(if $(PYTEST_ARGS),$(if $(findstring published,$(PYTEST_ARGS)),agents),agents)

# Branch coverage of the whole suite, including the processes it starts (pyproject's
# [tool.coverage.run]); the floors hold only for the full suite, not a run narrowed by PYTEST_ARGS.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: each pytest worker otherwise
# rewrites and compiles every test module again (about 4 CPU-s per worker under coverage).
test:
	@$(MAKE) --no-print-directory $(SIDE_BY_SIDE) $(LINTERS) $(TEST_NEEDS)
	$(BIN)/coverage erase
	PYTHONDONTWRITEBYTECODE= $(BIN)/coverage run -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)
	$(BIN)/coverage combine --quiet
	$(BIN)/python scripts/coverage_floor.py $(if $(PYTEST_ARGS),,--check)

# The benchmark (docs/benchmarks.md): every row but the idle-agent ones, on both databases, the
# cluster and the peers, sized for about 15 minutes on an idle 2-core machine like the table's (its
# first row, the host's speed, says whether this one is: a nested VM took 40-50 minutes); each part's wall
# and CPU seconds go to stderr as it ends. The idle-agent rows (1,000 sessions: tens of minutes)
# run on their own: `.venv/bin/python -m bench.run --only idle-agents [--sessions N]`. The bench
# modules are compiled too: each agent worker process the run starts imports them, and would
# compile them again where PYTHONDONTWRITEBYTECODE is set.
bench: install
	UV_PYTHON=$(PYTHON) $(UV) sync --frozen --quiet --compile-bytecode --extra bench
	$(BIN)/python -m compileall -q bench
	$(BIN)/python -m bench.run
