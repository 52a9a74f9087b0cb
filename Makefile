# memhub: the two commands a new user needs are `make run` and `make test`.
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
# The offline ONNX export of all-MiniLM-L6-v2 beside the checkout, when present (as in CI).
MODEL_DIR := $(abspath ../shared/models/all-MiniLM-L6-v2)
ifeq ($(origin MEMHUB_EMBED_MODEL_PATH), undefined)
ifneq ($(wildcard $(MODEL_DIR)/model.onnx),)
export MEMHUB_EMBED_MODEL_PATH := $(MODEL_DIR)
endif
endif

.PHONY: install run test migrate smoke lint lock conformance clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

run: install  ## serve memhub on MEMHUB_HOST:MEMHUB_PORT (embedded PostgreSQL unless DATABASE_URL)
	$(VENV)/bin/memhub

test: install  ## the whole suite, on a real PostgreSQL
	$(PY) -m pytest -q

migrate: install  ## apply pending migrations to the configured database
	$(VENV)/bin/memhub-admin migrate

smoke: install  ## SMOKE_BASE_URL=... SMOKE_TOKEN=... make smoke
	$(PY) scripts/smoke_mcp.py "$${SMOKE_BASE_URL:-http://127.0.0.1:8000}" "$$SMOKE_TOKEN"

conformance: install  ## CONFORMANCE_BASE_URL=... CONFORMANCE_TOKEN=... make conformance
	bash scripts/run_conformance.sh "$${CONFORMANCE_BASE_URL:-http://127.0.0.1:8000}" "$$CONFORMANCE_TOKEN"

lint: install
	$(VENV)/bin/ruff check .

lock:  ## regenerate constraints.txt from the verified environment
	$(PY) -m pip freeze --exclude-editable | grep -v '^memhub' > constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache
