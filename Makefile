# Quickstart targets: `make demo` and `make test` set up everything they need on a fresh Debian machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# the demo needs the browser, Tesseract and bubblewrap; the tests need PostgreSQL and Xvfb (a real X display
# for the x11_screen tests) too
DEMO_APT := chromium tesseract-ocr tesseract-ocr-eng fonts-dejavu-core bubblewrap
APT_PKGS := postgresql xvfb $(DEMO_APT)
DEMO_STAMP := $(VENV)/.demo-installed

# a module compiled once is not compiled again by each of the suite's hundreds of interpreters
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test setup sysdeps demo-sysdeps bench clean check static suite redos-check

# apt-get only what is missing: $(call apt,PACKAGES)
define apt
	@missing=""; \
	for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

sysdeps:
	$(call apt,$(APT_PKGS))

demo-sysdeps:
	$(call apt,$(DEMO_APT))

# --no-compile: pip would byte-compile every module of every package (half of its 80 s here); with bytecode written
# as modules are first imported (PYTHONDONTWRITEBYTECODE is left out of what make runs, below), only the modules
# the tests use are compiled, once
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q --no-compile -e '.[all,test]'
	# for the tests that write BrowserGym experiment folders; --no-deps: browsergym-core pins playwright==1.44
	# (its other dependencies are in the test extra)
	$(PIP) install -q --no-compile --no-deps 'browsergym-core==0.14.3' 'browsergym-experiments==0.14.3'
	touch $(STAMP)

# bytecode for the editable install: with PYTHONDONTWRITEBYTECODE set (as on CI), every referee command would
# compile each of its modules again (0.2 s of a 0.5 s start); a pip install of the wheel writes it likewise
setup: sysdeps $(STAMP)
	@$(PY) -m compileall -q src >/dev/null

# the demo installs only what it runs (the browser and Tesseract OCR), not the test tools: a fresh machine
# reaches it in seconds; `make setup` or `make test` later adds the rest to the same environment
$(DEMO_STAMP): pyproject.toml
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check -e '.[demo]'
	@$(PY) -m compileall -q src >/dev/null
	touch $(DEMO_STAMP)

demo: demo-sysdeps $(DEMO_STAMP)
	$(VENV)/bin/referee demo

# the walls of DESIGN.md (import-linter contracts in pyproject.toml), lint, types and the regex check
check: setup
	@$(MAKE) --no-print-directory static

static:
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check src tests benchmarks tools
	$(VENV)/bin/mypy src/referee
	$(PY) tools/redos_check.py

# the static checks run beside the suite (their verdict is printed when they end, their log if they fail; either
# failing fails the target). One worker more than the cores, up to 4: a third of the suite's time is spent waiting
# (on servers, browsers, signals, agents' timeouts), and the extra worker fills it. Each worker starts with a run of
# whole files in order (a file's module fixtures start once) and takes half of a busy worker's rest when it runs
# dry; each has its own PostgreSQL, moto server and signing key. REFEREE_HYPOTHESIS=thorough: every Hypothesis
# example (tests/support/hypo.py)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); n=$$((n + 1)); [ $$n -gt 4 ] && n=4; echo $$n)

test: setup
	@( $(MAKE) --no-print-directory static > $(VENV)/static.log 2>&1; rc=$$?; \
	   if [ $$rc = 0 ]; then echo "static checks passed (lint-imports, ruff, mypy, redos_check)"; \
	   else cat $(VENV)/static.log; echo "static checks FAILED (log above, also in $(VENV)/static.log)"; fi; \
	   exit $$rc ) & static=$$!; \
	$(MAKE) --no-print-directory suite; rc=$$?; \
	wait $$static || { echo "make test: the static checks failed (see above)"; exit 1; }; exit $$rc

suite:
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal

# every regex of the package searched over worst-case inputs (docs/security-inputs.md), the accepted ones too
redos-check: setup
	$(PY) tools/redos_check.py --all

bench: setup
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache
