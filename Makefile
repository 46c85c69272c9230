# A thin front door: `make` alone (or `make help`) lists the targets. The virtual
# environment is built in two steps: `make run` installs only what serving needs,
# `make test` adds the tools (pytest, ruff, mypy, Playwright, ...; the dependency
# group `test` in pyproject.toml). Each step is redone only when pyproject.toml or
# the list of the package's files changes (the strict editable install links each
# file, so a new module needs a reinstall). Another Python gets its own environment:
#   make test PYTHON=python3.13 VENV=.venv-3.13
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The package's files: those git tracks, and new ones not yet added inside its
# folders. A stray file at the root (a notes.json of your own) is not one. The
# guides and the README are data the service serves (/guides/).
PACKAGE_FILES := $(shell { git ls-files --cached '*.py' '*.json' '*.sql' 'ui/*' \
	'docs/*' README.md; \
	git ls-files --others --exclude-standard '*/*.py' '*/*.json' '*/*.sql' 'ui/*' \
	'docs/*'; } 2>/dev/null | grep -v -e '^tests/' -e '^bench/' -e '^examples/' -e '^tools/')
STAMP := $(shell echo $(PACKAGE_FILES) | cat pyproject.toml - | sha1sum | cut -c1-12)
SENTINEL := $(VENV)/.installed-$(STAMP)
TOOLS_SENTINEL := $(VENV)/.tools-$(STAMP)

.DEFAULT_GOAL := help
.PHONY: help venv tools dist run run-gateway test lint format reset reset-all clean \
	chromium postgres node-tools contract docker image-base image-wheels image image-test \
	system-tools systemd-analyze

help: ## list the targets, one line each (what `make` alone does)
	@awk -F ':.*## ' '/^[a-z-]+:.*## / { printf "  make %-18s %s\n", $$1, $$2 }' \
		$(MAKEFILE_LIST)

# The install is strict (a link tree of the package's files under build/), because
# mypy finds `refapi` only in real folders, never through the import hook of the
# default editable mode; setuptools then prints a banner about that tree on every
# install. pip's output goes to a log, and each step says one line; a failure shows
# the log's end. flock: `make run` and `make test` started together build it once.
INSTALL := $(BIN)/pip install --disable-pip-version-check
STRICT := --config-settings editable_mode=strict
define step
echo "$(1)"; { $(2); } >> $(VENV)/install.log 2>&1 || { tail -n 40 $(VENV)/install.log; exit 1; }
endef

$(SENTINEL): pyproject.toml
	@flock $(VENV).lock sh -c '[ -f $@ ] || { \
		start=$$(date +%s); rm -f $(VENV)/.installed-* $(VENV)/.tools-*; \
		[ -x $(BIN)/python ] || { echo "creating $(VENV) with $(PYTHON)"; \
			$(PYTHON) -m venv $(VENV) || exit 1; }; \
		: > $(VENV)/install.log; \
		$(call step,installing refapi and what serving needs (log: $(VENV)/install.log),\
			$(INSTALL) -e . $(STRICT)); \
		echo "installed in $$(( $$(date +%s) - start )) s;" \
			"$(VENV) takes $$(du -sm $(VENV) | cut -f1) MB"; \
		touch $@; }'

# What the tests, the linters and the browser tests need, and PostgreSQL's driver
# (the suite runs on both backends), and httplint for the explainer's notes. pip 25.1
# reads dependency groups (PEP 735). (A variable: a comma would end call's argument.)
TOOLS_EXTRAS := postgres,notes,fast
$(TOOLS_SENTINEL): $(SENTINEL)
	@flock $(VENV).lock sh -c '[ -f $@ ] || { \
		$(call step,updating pip (dependency groups need 25.1),\
			$(INSTALL) --upgrade "pip>=25.1"); \
		$(call step,installing the test tools (group test) and the postgres and notes extras,\
			$(INSTALL) -e ".[$(TOOLS_EXTRAS)]" --group test $(STRICT)); \
		touch $@; }'

venv: $(SENTINEL) ## build the virtual environment (.venv) with what serving needs
tools: $(TOOLS_SENTINEL) ## add the test, lint and browser tools to .venv
run: $(SENTINEL) ## serve on 127.0.0.1:8000 (REFAPI_BIND), data in data/
	$(BIN)/refapi serve
# The request log for a person at a terminal, unless the environment chooses.
run run-gateway: export REFAPI_LOG_FORMAT ?= text

# Two instances in one process (docs/embedding.md, "Mounting several instances").
run-gateway: $(SENTINEL) ## serve two instances, at /prod and /dev, in one process
	$(BIN)/gunicorn --config examples/gateway.conf.py 'examples.gateway:create_gateway()'
# Its files (each instance's folder, its control socket) under data/gateway, so
# `make run`'s in data/ are left alone (examples/gateway.py).
run-gateway: export REFAPI_DATA_DIR := data/gateway

# Every test in one run, in parallel: TEST_JOBS worker processes (pytest-xdist;
# three a core, since a worker often waits on a server or a database: on two cores
# six kept both busy to the end; four left them idle over a third of the time). Each test
# runs on SQLite, and those whose outcome depends on the backend (marked
# every_backend) on PostgreSQL too (tests/conftest.py; docs/development.md, "Which
# backends a test runs on"). Unless ONCE=no (CI's second Python), the same run
# holds what depends on neither the Python nor the backend: the contract checks
# (tests/contract/conftest.py) and the container image (tests/image). It installs
# nothing outside the checkout: what a test needs of the system, `make
# system-tools` installs (README, "Quick start"); without it that test skips,
# naming the target. Bytecode is written even where the environment says not to:
# pytest's plugins load before tests/conftest.py can say so (docs/development.md,
# "Running the tests").
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 3 )))
ONCE_ONLY := --ignore=tests/contract --ignore=tests/image
ONCE ?= yes
test: lint postgres node-tools ## lint, then every test in parallel: both backends, the contract, the image
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n $(TEST_JOBS) $(if $(filter yes,$(ONCE)),,$(ONCE_ONLY)) $(PYTEST_ARGS)

contract: $(TOOLS_SENTINEL) node-tools ## the contract checks alone: Redocly, Spectral, Prism, the TypeScript client
	$(BIN)/pytest tests/contract $(PYTEST_ARGS)

# The contract tools and axe-core (the browser tests' accessibility check), pinned in
# tools/contract/package-lock.json, with Node.js's npm. Without npm, say why and go on:
# the tests that need them then skip, or fail under REFAPI_REQUIRE_SERVICES=1.
NODE_SENTINEL := tools/contract/node_modules/.installed-$(shell \
	cat tools/contract/package-lock.json 2>/dev/null | sha1sum | cut -c1-12)
node-tools: ## install the pinned npm tools (tools/contract), if npm is there
	@if [ -f $(NODE_SENTINEL) ]; then :; \
	elif command -v npm >/dev/null; then \
		echo "installing the contract tools into tools/contract/node_modules (npm ci)"; \
		cd tools/contract && npm ci --no-audit --no-fund --loglevel=error >/dev/null \
			&& touch $(NODE_SENTINEL:tools/contract/%=%) \
			|| echo "node-tools: npm ci failed; the contract tests will not run"; \
	else echo "node-tools: npm is missing; the contract tests will not run"; fi

# The tests' PostgreSQL (tests/postgres.py) is the machine's cluster, started here
# when it is stopped. Without Debian's pg_lsclusters and pg_ctlcluster nothing is
# done, and make goes on: the PostgreSQL tests then skip, or fail in CI.
postgres: ## start the machine's PostgreSQL cluster for the tests, if it is stopped
	@if command -v pg_lsclusters >/dev/null && command -v pg_ctlcluster >/dev/null; \
	then pg_lsclusters --no-header | while read -r version cluster port status rest; do \
		[ "$$cluster" = main ] && [ "$$status" = down ] || continue; \
		echo "starting PostgreSQL $$version/main for the tests"; \
		pg_ctlcluster --skip-systemctl-redirect "$$version" main start \
			|| echo "postgres: could not start $$version/main; its tests will not run"; \
	done; fi

# -- What the tests need of the system (docs/development.md, "What the tests need
# of the system"): Debian's packages, installed by `make system-tools` alone, never
# by `make test`. Each target installs its packages when a program of theirs is
# missing, as root with apt-get; otherwise it says why and fails, as a target asked
# for by name should. (The bench's wrk and valgrind are the bench targets' own.)
system-tools: chromium docker image-base systemd-analyze ## as root: apt-get install what the browser, image and systemd tests need; start dockerd; make the image tests' base

# Another install running (the machine's own, or another target's) holds dpkg's
# lock: wait for it rather than fail.
APT := apt-get -o DPkg::Lock::Timeout=600
# $(call apt_install,PROGRAMS,PACKAGES,WHAT FOR): no comma within an argument.
define apt_install
missing=$$(for program in $(1); do [ -x $$program ] || echo $$program; done); \
if [ -z "$$missing" ]; then :; \
elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	echo "installing Debian's $(2) for $(3)"; \
	{ $(APT) update -qq && DEBIAN_FRONTEND=noninteractive \
		$(APT) install -y -qq $(2) >/dev/null; } \
	|| { echo "$@: apt-get install $(2) failed"; exit 1; }; \
else echo "$@:" $$missing "missing; installing $(2) needs root and apt-get"; exit 1; fi
endef

# The browser tests drive Debian's Chromium, never a browser of Playwright's own
# download.
CHROMIUM := /usr/bin/chromium
chromium: ## as root: apt-get install Debian's chromium, for the browser tests
	@$(call apt_install,$(CHROMIUM),chromium,the browser tests)

# The systemd unit's test checks deploy/refapi.service with systemd-analyze verify.
systemd-analyze: ## as root: apt-get install systemd (systemd-analyze), for the unit's test
	@$(call apt_install,/usr/bin/systemd-analyze,systemd,the systemd unit's test)

lint: $(TOOLS_SENTINEL) ## ruff check, ruff format --check, mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy -p refapi -m examples.gateway

format: $(TOOLS_SENTINEL) ## fix what ruff can, and format
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

reset: $(SENTINEL) ## put the records back to the seed, accounts kept (also while serving)
	$(BIN)/refapi reset

reset-all: $(SENTINEL) ## reset, and remove every credential and every account but the first admin (also while serving)
	$(BIN)/refapi reset --all

# A wheel of the package (docs/operating.md, "The refapi command"): pip builds it
# with setuptools, as `pip install .` would; nothing is fetched but setuptools.
dist: $(SENTINEL) ## build the wheel into dist/ (pip install it, with [postgres] for PostgreSQL)
	$(BIN)/pip wheel --disable-pip-version-check --quiet --no-deps --wheel-dir dist .
	@ls dist/*.whl

# -- The container image (Dockerfile; docs/operating.md, "Run it in a container") --
# Its Python and platform name the wheels it installs: those of the default base and
# of Debian bookworm's python3, which the image test builds on.
BASE_IMAGE ?= python:3.11-slim-bookworm
IMAGE_PYTHON ?= 3.11
IMAGE_PLATFORM ?= manylinux2014_$(shell uname -m)
# (Expanded where used, never as make starts: `make postgres` needs neither.)
VERSION = $(shell sed -n 's/^VERSION = "\(.*\)"$$/\1/p' config.py)
IMAGE ?= refapi:$(VERSION)
# Debian's client where it is: a newer one earlier on PATH may ask Debian's daemon
# for an API version it does not speak.
DOCKER ?= $(firstword $(wildcard /usr/bin/docker) docker)
DOCKER_TOOLS := /usr/bin/docker /usr/bin/docker-compose /usr/sbin/debootstrap
WHEELS_SENTINEL = dist/image/.wheels-$(STAMP)-$(IMAGE_PYTHON)-$(IMAGE_PLATFORM)
PIP := $(BIN)/pip --disable-pip-version-check

# Debian's docker.io (the daemon and its client), docker-compose (v1: Debian has no
# compose plugin) and debootstrap (the test's base image), installed when missing;
# then a daemon started when none answers, as `make postgres` starts the cluster.
# This one makes no bridge and leaves the machine's firewall and forwarding alone:
# the test runs its containers on the host's network, bound to loopback
# (tests/image/test_image.py). Starting it needs root too.
docker: ## as root: apt-get install Debian's docker.io, docker-compose and debootstrap; start dockerd
	@$(call apt_install,$(DOCKER_TOOLS),docker.io docker-compose debootstrap,the image tests)
	@if $(DOCKER) info >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v dockerd >/dev/null; then \
		echo "starting dockerd (log: /var/log/dockerd.log)"; \
		setsid dockerd --bridge=none --iptables=false --ip-forward=false \
			>> /var/log/dockerd.log 2>&1 < /dev/null & \
		for i in $$(seq 30); do $(DOCKER) info >/dev/null 2>&1 && break; sleep 1; done; \
		$(DOCKER) info >/dev/null 2>&1 || { echo "docker: dockerd did not start" \
			"(/var/log/dockerd.log)"; exit 1; }; \
	else echo "docker: no Docker daemon answers; starting one needs root"; exit 1; fi

# The image tests' base (Debian bookworm made with debootstrap, kept by Docker): made
# here once a machine, so a run of the tests does not spend minutes on it
# (tests/image/base.py; without it the tests make it themselves).
image-base: docker ## as root: make the image tests' base with debootstrap, once a machine
	@$(PYTHON) tests/image/base.py

# The build runs with no network, so what it installs is downloaded first: refapi's
# wheel and those it needs with the PostgreSQL extra, for the image's Python and
# platform (binary wheels only: the base has no compiler). Redone when the package
# changes, like the virtual environment; pip's output goes to dist/image.log.
image-wheels: $(SENTINEL) ## download the wheels the image installs into dist/image/
	@[ -f $(WHEELS_SENTINEL) ] || { \
		echo "downloading the image's wheels (Python $(IMAGE_PYTHON)," \
			"$(IMAGE_PLATFORM)) into dist/image/ (log: dist/image.log)"; \
		rm -rf dist/image && mkdir -p dist/image && : > dist/image.log; \
		{ $(PIP) wheel --no-deps --wheel-dir dist/image . && $(PIP) download \
			--only-binary=:all: --python-version $(IMAGE_PYTHON) \
			--platform $(IMAGE_PLATFORM) --dest dist/image \
			"$$(ls dist/image/refapi-*.whl)[postgres,fast]"; } >> dist/image.log 2>&1 \
			|| { tail -n 40 dist/image.log; exit 1; }; \
		touch $(WHEELS_SENTINEL); }

# --network=none: the proof that the build needs nothing but the wheels. It needs a
# Docker daemon, which it never installs or starts (`make docker` does).
image: image-wheels ## build the container image (IMAGE=refapi:VERSION, BASE_IMAGE=...)
	@$(DOCKER) info >/dev/null 2>&1 || { echo "image: no Docker daemon answers" \
		"(make docker, as root, installs and starts one)"; exit 1; }
	$(DOCKER) build --network=none --build-arg BASE_IMAGE=$(BASE_IMAGE) \
		--build-arg VERSION=$(VERSION) --tag $(IMAGE) .

image-test: $(TOOLS_SENTINEL) postgres ## the image's test alone: build it on Debian, run it, stop it
	$(BIN)/pytest tests/image $(PYTEST_ARGS)

clean: ## remove the virtual environments and the data
	rm -rf $(VENV) $(BENCH_VENV) data build dist .pytest_cache .ruff_cache .mypy_cache *.egg-info $(VENV).lock

# The benchmark's own environment: refapi with its PostgreSQL extra (the benchmark
# runs both backends), plus the peers it is compared with. What is installed is part
# of the sentinel, so an environment built without the extra is rebuilt.
BENCH_VENV := .venv-bench
BENCH_INSTALL := -e '.[postgres,fast]' -r bench/requirements.txt
BENCH_SENTINEL := $(BENCH_VENV)/.installed-$(shell echo "$(BENCH_INSTALL)" \
	| cat pyproject.toml bench/requirements.txt - | sha1sum | cut -c1-12)

$(BENCH_SENTINEL): pyproject.toml bench/requirements.txt
	rm -f $(BENCH_VENV)/.installed-*
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/pip install --quiet $(BENCH_INSTALL)
	touch $@

.PHONY: bench bench-inproc wrk
wrk: ## install wrk (Debian's), which `make bench` drives
	@command -v wrk >/dev/null || { $(APT) update -qq && $(APT) install -y -qq wrk; }

# Over HTTP, refapi as shipped (`refapi serve`) beside the bare app on stock
# gunicorn; then the worst bad bodies through the whole stack (what refusing costs).
bench: $(BENCH_SENTINEL) wrk ## over HTTP: refapi as shipped beside the bare app and peers
	$(BENCH_VENV)/bin/python bench/run.py
	$(BENCH_VENV)/bin/python bench/bad_bodies.py

bench-inproc: $(BENCH_SENTINEL) ## one WSGI call through the stack, beside the baseline
	$(BENCH_VENV)/bin/python bench/inproc.py

# Counted, not timed: a figure that holds on a noisy machine (valgrind's callgrind).
.PHONY: bench-instructions
bench-instructions: $(BENCH_SENTINEL) ## instructions per request beside the bare app
	@command -v valgrind >/dev/null || { $(APT) update -qq && $(APT) install -y -qq valgrind; }
	$(BENCH_VENV)/bin/python bench/instructions.py

# /healthz while two hundred clients trickle their heads, on each server
# (docs/operating.md, "Two servers").
.PHONY: bench-slow-clients
bench-slow-clients: $(TOOLS_SENTINEL) ## /healthz p50 and p99 beside 200 header tricklers, each server
	$(BIN)/python bench/slow_clients.py

# The container image's size and throughput beside refapi serve on the host, on
# Granian both (bench/container.py). The image is built on the image tests' base,
# made with debootstrap (`make image-base`, as root, once), as no registry is
# reached; it needs a Docker daemon (`make docker`, as root).
BENCH_BASE_IMAGE ?= refapi-test-base:bookworm
.PHONY: bench-container
bench-container: $(BENCH_SENTINEL) wrk ## the container image's throughput beside refapi serve on the host
	$(MAKE) image BASE_IMAGE=$(BENCH_BASE_IMAGE)
	$(BENCH_VENV)/bin/python bench/container.py $(IMAGE)

# /healthz while slow work is used as a lever (docs/operating.md, "Slow work shares
# the host"): the attacks and the server of tests/e2e/test_slow_work.py, whose
# harness .venv's tools install.
.PHONY: bench-slow-work
bench-slow-work: $(TOOLS_SENTINEL) ## /healthz p50 and p99 while slow work is an attacker's lever
	$(BIN)/python bench/slow_work.py

# The same count split by layer: what each layer of app.py's stack costs a request.
.PHONY: bench-layers
bench-layers: $(BENCH_SENTINEL) ## instructions per request, layer by layer
	@command -v valgrind >/dev/null || { $(APT) update -qq && $(APT) install -y -qq valgrind; }
	$(BENCH_VENV)/bin/python bench/layers.py

# What one step of a request costs (an environ read, a call, a system call), to
# weigh a cut before it is made (docs/benchmarks.md, "What a step costs").
.PHONY: bench-prices
bench-prices: $(BENCH_SENTINEL) ## instructions one step of a request costs, step by step
	@command -v valgrind >/dev/null || { $(APT) update -qq && $(APT) install -y -qq valgrind; }
	$(BENCH_VENV)/bin/python bench/prices.py

.PHONY: bench-workers
bench-workers: $(BENCH_SENTINEL) wrk ## which gunicorn workers `make run` should ship
	$(BENCH_VENV)/bin/python bench/workers.py

# What one explanation costs, hostile or not, against its budget (docs/explain.md,
# "Limits"): with httplint, the `notes` extra, which .venv's tools install.
.PHONY: bench-explain
bench-explain: $(TOOLS_SENTINEL) ## CPU per explanation, the worst five, against 25 ms
	$(BIN)/python bench/explain.py

# Swagger UI at /docs over the served document, in headless Chromium through
# Playwright, one of the test tools (docs/development.md, "The OpenAPI document's size").
.PHONY: bench-docs
bench-docs: $(TOOLS_SENTINEL) ## /docs in headless Chromium: first paint, operations drawn
	$(BIN)/python bench/docs_paint.py
