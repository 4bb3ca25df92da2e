# Quick start: `make run` serves the app; `make test` runs every test.
# Both create .venv, install what is missing, start the embedded database,
# apply migrations and seed. Running them again is fast and changes nothing.

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP_STAMP := $(VENV)/.requirements-installed
APT_STAMP := $(VENV)/.system-packages-installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test bench bench-full db install system-packages clean-data

install: $(PIP_STAMP)

# torch first, pinned: pip then takes the CPU build from local disk instead of a multi-GB CUDA build.
$(PIP_STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

# Debian's chromium for the browser tests (Playwright drives it; it never downloads a browser),
# and a font so screenshots have readable text.
APT_PACKAGES := chromium fonts-dejavu-core
system-packages: $(APT_STAMP)
$(APT_STAMP): | $(PIP_STAMP)
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); }
	@touch $@

db: $(PIP_STAMP)
	$(PY) -m core.db migrate
	$(PY) -m core.db seed

run: db
	$(PY) -m streamlit run streamlit_app.py --server.address 127.0.0.1 --server.port 8501 --server.headless true

test: db system-packages
	$(PY) -m pytest

bench: db
	$(PY) -m bench

# The conversation-memory scale run at full size: 1,000,000 turns over 1,000 users (an hour or more on 2 cores).
bench-full: db
	$(PY) -m bench --conversation-full

clean-data:
	rm -rf .data
