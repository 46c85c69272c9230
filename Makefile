# A thin front door. The virtual environment is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SENTINEL := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: run test lint format reset clean

$(SENTINEL): pyproject.toml
	rm -f $(VENV)/.installed-*
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

run: $(SENTINEL)
	$(BIN)/gunicorn --config gunicorn.conf.py app:application

test: $(SENTINEL)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(SENTINEL)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(SENTINEL)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

reset: $(SENTINEL)
	$(BIN)/python -m storage reset

clean:
	rm -rf $(VENV) data .pytest_cache .ruff_cache *.egg-info
