# Quick start: `make run` serves the app; `make test` runs every test; `make doctor` checks the configuration.
# They create .venv, install what is missing, start the embedded database,
# apply migrations and seed. Running them again is fast and changes nothing.

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP_STAMP := $(VENV)/.requirements-installed
APT_STAMP := $(VENV)/.system-packages-installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test lint format screenshots bench bench-full security doctor db install constraints system-packages clean-data

install: $(PIP_STAMP)

# torch first, pinned: pip then takes the CPU build from local disk instead of a multi-GB CUDA build.
# constraints.txt holds every package's version, dependencies of dependencies included.
$(PIP_STAMP): requirements.txt constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0 -c constraints.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -c constraints.txt
	@touch $@

# After editing requirements.txt: pin what it now brings in (resolved from the index, nothing installed).
constraints:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) tools/pin_constraints.py

# Debian's chromium for the browser tests (Playwright drives it; it never downloads a browser),
# a font so screenshots have readable text, espeak-ng + sox for the benchmark's recorded speech set,
# and binutils (objdump) for the test that the embedded server's binaries suit any x86-64 CPU.
APT_PACKAGES := chromium fonts-dejavu-core espeak-ng sox binutils
system-packages: $(APT_STAMP)
$(APT_STAMP): Makefile | $(PIP_STAMP)
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); }
	@touch $@

db: $(PIP_STAMP)
	$(PY) -m core migrate
	$(PY) -m core seed

run: db
	$(PY) -m core cleanup
	$(PY) -m streamlit run streamlit_app.py --server.address 127.0.0.1 --server.port 8501 --server.headless true

test: db system-packages
	$(PY) -m pytest

# Style: ruff's lint rules and formatter (settings in pyproject.toml). CI runs this before the tests.
lint: $(PIP_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(PIP_STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# The browser tests retake docs/screenshots/*.png only when asked (a normal test run leaves the tree clean).
screenshots: db system-packages
	MP_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -m browser

# The hostile-input suite with thousands of cases (make test runs a few hundred), then the benchmarks
# (the first-visit benchmark drives Debian's chromium).
bench: db system-packages
	HOSTILE_INPUT_EXAMPLES=300 $(PY) -m pytest tests/core/test_hostile_input.py -q -p no:cacheprovider
	$(PY) -m bench

# The conversation-memory scale run at full size: 1,000,000 turns over 1,000 users (an hour or more on 2 cores).
bench-full: db
	$(PY) -m bench --conversation-full

# The 13 probes of the hardening review, run again on a throwaway database (docs/SECURITY.md).
# As root it also creates a throwaway local account to try connecting as someone else.
security: $(PIP_STAMP)
	$(PY) -m bench.security

# Checks the configuration you set, live (database, auth, embeddings, LLM, STT/TTS, LiveKit);
# exits non-zero when something configured is broken.
doctor: db
	$(PY) -m core.doctor

clean-data:
	rm -rf .data
