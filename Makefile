# The two commands of README.md. Each creates the virtual environment it needs.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: app test lint

$(STAMP): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

app: $(STAMP)
	$(VENV)/bin/streamlit run app/streamlit_app.py

test: $(STAMP)
	bash scripts/ensure_chromium.sh
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
