# Weir — the two commands: `make run` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PYTHON ?= python3.11
STAMP := $(VENV)/.installed

.PHONY: install run test lint format system-deps clean

# Debian packages the project needs: redis-server (coordination store), kcat (a librdkafka
# client used by the integration tests), chromium (the dashboard's browser tests), a Java
# runtime (PySpark) and docker-compose (the compose file's validation test).
system-deps:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(STAMP): requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $(STAMP)

install: system-deps $(STAMP)

run: install
	$(PY) manage.py devcluster

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
