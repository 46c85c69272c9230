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
	rm -rf $(VENV) $(BENCH_VENV) data .pytest_cache .ruff_cache *.egg-info

# The benchmark's own environment: refapi plus the peers it is compared with.
BENCH_VENV := .venv-bench
BENCH_SENTINEL := $(BENCH_VENV)/.installed-$(shell cat pyproject.toml bench/requirements.txt | sha1sum | cut -c1-12)

$(BENCH_SENTINEL): pyproject.toml bench/requirements.txt
	rm -f $(BENCH_VENV)/.installed-*
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/pip install --quiet -e . -r bench/requirements.txt
	touch $@

.PHONY: bench bench-inproc wrk
wrk:
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }

bench: $(BENCH_SENTINEL) wrk
	$(BENCH_VENV)/bin/python bench/run.py

bench-inproc: $(BENCH_SENTINEL)
	$(BENCH_VENV)/bin/python bench/inproc.py

.PHONY: bench-workers
bench-workers: $(BENCH_SENTINEL) wrk
	$(BENCH_VENV)/bin/python bench/workers.py
