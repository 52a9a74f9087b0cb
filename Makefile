# memhub: a new user needs two commands, `make run` and `make test`. Everything else they need
# (the virtualenv, Chromium and the MCP conformance suite for the tests) is installed on demand:
# `make run` installs only what the server needs, `make test` adds the test tools.
SHELL   := /bin/bash
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
# What is installed, one stamp each. Installing the test tools installs the server's too, so
# it leaves both stamps: `make run` after `make test` installs nothing more, and `make test`
# after `make run` adds only the test tools.
STAMP      := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.installed-test-stamp
# The repository's root is the package `memhub` without a directory of that name: mypy (as
# pyproject.toml configures it, so a bare `.venv/bin/mypy` works too) finds it through this link.
TYPECHECK_LINK := $(VENV)/typecheck/memhub
CONFORMANCE := scripts/conformance/node_modules/.package-lock.json
# Debian's Chromium for the dashboard's browser tests (never a browser download).
CHROMIUM := /usr/bin/chromium
# Debian's PgBouncer: the tests run memhub behind one (bench/pgbouncer.py).
PGBOUNCER := /usr/sbin/pgbouncer
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The offline ONNX export of all-MiniLM-L6-v2 beside the checkout, when present (as in CI).
MODEL_DIR := $(abspath ../shared/models/all-MiniLM-L6-v2)
ifeq ($(origin MEMHUB_EMBED_MODEL_PATH), undefined)
ifneq ($(wildcard $(MODEL_DIR)/model.onnx),)
export MEMHUB_EMBED_MODEL_PATH := $(MODEL_DIR)
endif
endif

.PHONY: install install-test test-deps run stop test migrate smoke demo conformance lint lock clean

$(STAMP): pyproject.toml constraints.txt
	@echo "memhub: installing into $(VENV) (the first time takes a minute or two)..."
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --progress-bar off -c constraints.txt -e .
	@touch $(STAMP)
	@echo "memhub: installed."

$(TEST_STAMP): pyproject.toml constraints.txt
	@echo "memhub: installing memhub and its test tools into $(VENV)..."
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --progress-bar off -c constraints.txt -e ".[test]"
	@touch $(STAMP) $(TEST_STAMP)
	@echo "memhub: installed."

install: $(STAMP)  ## the virtualenv with memhub: what the server needs

$(TYPECHECK_LINK):
	@mkdir -p $(dir $@) && ln -sfn $(CURDIR) $@

install-test: $(TEST_STAMP) | $(TYPECHECK_LINK)  ## the same and the test tools (pytest, Playwright, ruff, mypy...)

$(CHROMIUM):
	@echo "memhub: installing Debian's chromium for the browser tests..."
	@$(SUDO) apt-get update -qq
	@DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null

# The tests start PgBouncers of their own; the packaged service is stopped and left disabled.
$(PGBOUNCER):
	@echo "memhub: installing Debian's pgbouncer for the pooled-database tests..."
	@$(SUDO) apt-get update -qq
	@DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq pgbouncer >/dev/null
	@$(SUDO) systemctl disable --now pgbouncer >/dev/null 2>&1 || true

$(CONFORMANCE): scripts/conformance/package.json scripts/conformance/package-lock.json
	@echo "memhub: installing the MCP conformance suite (npm)..."
	@cd scripts/conformance && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

test-deps: install-test $(CHROMIUM) $(PGBOUNCER) $(CONFORMANCE)  ## what only the test suite needs

run: install  ## serve memhub on MEMHUB_HOST:MEMHUB_PORT (embedded PostgreSQL unless DATABASE_URL)
	@echo "memhub: starting on http://$${MEMHUB_HOST:-127.0.0.1}:$${MEMHUB_PORT:-8000} (Ctrl-C or 'make stop' stops it)"
	@exec $(VENV)/bin/memhub

stop:  ## stop a memhub started by `make run` (and the embedded PostgreSQL it started)
	@pkill -INT -f "$(abspath $(VENV))/bin/memhub$$" && echo "memhub: stopping." || echo "memhub: not running."

test: test-deps lint  ## lint and type check, then the whole suite on a real PostgreSQL
	$(PY) -m pytest -q

migrate: install  ## apply pending migrations to the configured database
	$(VENV)/bin/memhub-admin migrate

demo: install  ## DEMO_TOKEN_A=<desktop-cli> DEMO_TOKEN_B=<cursor> make demo: two clients, one memory
	$(PY) scripts/demo.py "$${DEMO_BASE_URL:-http://127.0.0.1:8000}" "$$DEMO_TOKEN_A" "$$DEMO_TOKEN_B"

smoke: install  ## SMOKE_BASE_URL=... MEMHUB_SMOKE_TOKEN=... make smoke: memhub-admin smoke
	$(VENV)/bin/memhub-admin smoke --url "$${SMOKE_BASE_URL:-http://127.0.0.1:8000}"

conformance: install $(CONFORMANCE)  ## CONFORMANCE_BASE_URL=... CONFORMANCE_TOKEN=... make conformance
	bash scripts/run_conformance.sh "$${CONFORMANCE_BASE_URL:-http://127.0.0.1:8000}" "$$CONFORMANCE_TOKEN"

lint: install-test | $(TYPECHECK_LINK)  ## ruff, and the type checker on the package (run by `make test`)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

lock:  ## regenerate constraints.txt from the verified environment
	$(PY) -m pip freeze --exclude-editable | grep -v '^memhub' > constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache
