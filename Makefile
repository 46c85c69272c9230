# A thin front door. The virtual environment is rebuilt only when pyproject.toml or
# the list of the package's files changes (the strict editable install links each
# file, so a new module needs a reinstall). Another Python gets its own environment:
#   make test PYTHON=python3.13 VENV=.venv-3.13
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PACKAGE_FILES := $(shell git ls-files --cached --others --exclude-standard \
	'*.py' '*.json' '*.sql' 'ui/*' 2>/dev/null \
	| grep -v -e '^tests/' -e '^bench/' -e '^examples/')
SENTINEL := $(VENV)/.installed-$(shell echo $(PACKAGE_FILES) | cat pyproject.toml - \
	| sha1sum | cut -c1-12)

.PHONY: run run-gateway test lint format reset clean chromium

# flock: `make run` and `make test` started together build the environment once.
$(SENTINEL): pyproject.toml
	@flock $(VENV).lock sh -c '[ -f $@ ] || { \
		rm -f $(VENV)/.installed-* && \
		$(PYTHON) -m venv $(VENV) && \
		$(BIN)/pip install --quiet --upgrade pip && \
		$(BIN)/pip install --quiet -e ".[test]" --config-settings editable_mode=strict && \
		touch $@; }'

run: $(SENTINEL)
	$(BIN)/gunicorn --config gunicorn.conf.py 'refapi:create_app()'

# Two instances in one process, at /prod and /dev (README, "Mounting several instances").
run-gateway: $(SENTINEL)
	$(BIN)/gunicorn --config gunicorn.conf.py 'examples.gateway:create_gateway()'

test: lint chromium
	$(BIN)/pytest $(PYTEST_ARGS)

# The browser tests drive Debian's Chromium, never a browser of Playwright's own
# download. Installed here when missing and apt-get can (as root); otherwise say why
# and go on: those tests then skip, or fail under REFAPI_REQUIRE_SERVICES=1.
CHROMIUM := /usr/bin/chromium
chromium:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq chromium >/dev/null; } \
		|| echo "chromium: apt-get failed; the browser tests will not run"; \
	else \
		echo "chromium: $(CHROMIUM) is missing and apt-get needs root;" \
			"the browser tests will not run"; \
	fi

lint: $(SENTINEL)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy -p refapi -m examples.gateway

format: $(SENTINEL)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

reset: $(SENTINEL)
	$(BIN)/python -m refapi.storage reset

clean:
	rm -rf $(VENV) $(BENCH_VENV) data build .pytest_cache .ruff_cache .mypy_cache *.egg-info $(VENV).lock

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

# Over HTTP, then the worst bad bodies through the whole stack (what refusing costs).
bench: $(BENCH_SENTINEL) wrk
	$(BENCH_VENV)/bin/python bench/run.py
	$(BENCH_VENV)/bin/python bench/bad_bodies.py

bench-inproc: $(BENCH_SENTINEL)
	$(BENCH_VENV)/bin/python bench/inproc.py

.PHONY: bench-workers
bench-workers: $(BENCH_SENTINEL) wrk
	$(BENCH_VENV)/bin/python bench/workers.py
