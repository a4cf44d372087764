# The two commands of the README: `make run` starts Clarion on the embedded default,
# `make test` runs the whole suite (lint, types, layer rules, tests). Both install
# what they need from uv.lock into .venv first.
PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin
# Most tests wait on real processes and sockets, so more workers than cores pays off.
PYTEST_WORKERS ?= 4

.PHONY: run test lint install bench browser agents

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

run: install
	$(BIN)/clarion serve

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

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

test: lint agents
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

bench: install
	UV_PYTHON=$(PYTHON) $(UV) sync --frozen --quiet --compile-bytecode --extra bench
	$(BIN)/python -m bench.run
