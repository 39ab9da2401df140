# The two commands of README.md. Each creates the virtual environment it needs: `make app` installs the
# runtime set (requirements.lock), `make test` adds the tools (requirements-dev.lock); both are hashed.
VENV := .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.runtime-installed
DEV := $(VENV)/.dev-installed

.PHONY: app test lint

$(RUNTIME): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --require-hashes -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

$(DEV): $(RUNTIME) requirements-dev.lock
	$(PY) -m pip install -q --require-hashes -r requirements-dev.lock
	touch $@

app: $(RUNTIME)
	$(VENV)/bin/streamlit run app/streamlit_app.py

test: $(DEV)
	bash scripts/ensure_chromium.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -n 2 -q

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
