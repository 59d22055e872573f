# Weir — the two commands: `make run` and `make test`.
#
# Each installs only what it needs: `make run` the runtime (Debian's redis-server and a Java
# runtime for the Spark analytics jobs; requirements.txt), `make test` the runtime plus the
# test tools (kcat, chromium, docker-compose; requirements-test.txt).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PYTHON ?= python3.11
RUN_STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# pytest-xdist workers for `make test` (2 cores: the tests mostly wait on sockets and timers,
# so more workers than cores pays; see docs/testing.md).
TEST_WORKERS ?= 4

# Debian packages as probe=package: the probe is a command on PATH or an absolute path.
# Running Weir: redis-server (coordination store), a Java runtime (PySpark's JVM).
RUNTIME_DEBS := redis-server=redis-server java=openjdk-17-jre-headless
# Only the tests: kcat (a librdkafka client), chromium (the dashboard's browser tests) and
# docker-compose (the compose file's validation test).
TEST_DEBS := kcat=kcat /usr/bin/chromium=chromium docker-compose=docker-compose

.PHONY: install install-test run test lint format system-deps test-system-deps clean

# $(call install_debs,probe=package ...): apt-get install the packages whose probe is missing.
define install_debs
	@missing=""; \
	for pair in $(1); do \
	  probe="$${pair%%=*}"; package="$${pair#*=}"; \
	  case "$$probe" in \
	    /*) test -x "$$probe" || missing="$$missing $$package" ;; \
	    *) command -v "$$probe" >/dev/null || missing="$$missing $$package" ;; \
	  esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

system-deps:
	$(call install_debs,$(RUNTIME_DEBS))

test-system-deps: system-deps
	$(call install_debs,$(TEST_DEBS))

$(RUN_STAMP): requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $(RUN_STAMP)

$(TEST_STAMP): $(RUN_STAMP) requirements-test.txt
	$(PIP) install -q -r requirements-test.txt
	touch $(TEST_STAMP)

install: system-deps $(RUN_STAMP)

install-test: test-system-deps $(TEST_STAMP)

run: install
	$(PY) manage.py devcluster

test: install-test
	$(PY) -m pytest -n $(TEST_WORKERS)

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-test
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
