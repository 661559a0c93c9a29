# Two commands for a newcomer: `make book` and `make test`. Both create .venv and install the
# exact lock (requirements.lock) on first use.
PYTHON  ?= $(shell command -v python3.11 || command -v python3)
VENV    := .venv
BIN     := $(VENV)/bin
PROFILE ?= quick
PARAMS  ?=
PYTEST_ARGS ?=

LINT    := .venv-lint
AXE     := .ci/node_modules/axe-core/axe.min.js
AXE_VERSION := 4.14.1

.PHONY: install book run test test-fast browser-test lint bench lock clean clean-results pdf axe

$(BIN)/.installed: requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

install: $(BIN)/.installed

## make book [PROFILE=quick] [PARAMS="epochs=2 seeds=[1]"]: run the notebook chain, build _build/html
book: install
	$(BIN)/topolip book --profile $(PROFILE) $(PARAMS)

## make run: the notebook chain only (no book build)
run: install
	$(BIN)/topolip run --profile $(PROFILE) $(PARAMS)

## make test: the whole suite (unit, doctests, notebook chain with tiny parameters, book build)
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: install
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

## make browser-test: the built book (_build/html, from `make book`) in headless chromium with the
## network off: pages load, images load, math typeset, internal links resolve, no error output.
## Needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver).
## It also runs axe-core (npm, installed into the git-ignored .ci/node_modules by `make axe`) on
## every page, and checks the PDF of `make pdf` against the HTML (tests/test_pdf.py).
browser-test: install $(AXE)
	$(BIN)/python -m pytest -m browser tests/test_browser.py tests/test_pdf.py $(PYTEST_ARGS)

## make pdf: the built book (make book first) printed to _build/pdf/<name>.pdf by Debian's
## headless chromium, offline; a copy goes into _build/html for the site's link.
pdf: install
	$(BIN)/topolip pdf

## make axe: npm's axe-core for the browser test's accessibility check (no network at test time)
axe: $(AXE)
$(AXE):
	npm install --silent --no-audit --no-fund --prefix .ci axe-core@$(AXE_VERSION)

## make lint: ruff; actionlint on the workflow and cffconvert on CITATION.cff, from their own
## small environment .venv-lint (requirements-lint.lock: cffconvert needs jsonschema<4, which
## the book's packages cannot share).
$(LINT)/.installed: requirements-lint.lock
	@test -x $(LINT)/bin/python || $(PYTHON) -m venv $(LINT)
	$(LINT)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-lint.lock
	@touch $@

lint: install $(LINT)/.installed
	$(BIN)/ruff check topolip tests benchmarks notebooks
	$(LINT)/bin/actionlint .github/workflows/*.yml
	$(LINT)/bin/cffconvert --validate -i CITATION.cff

## make bench: speed and memory against the reference tools (prints ratios)
bench: install
	$(BIN)/python benchmarks/bench_distances.py
	$(BIN)/python benchmarks/bench_topolip.py
	$(BIN)/python benchmarks/tasks_train.py

## make lock: re-pin requirements.lock from the current .venv (after changing pyproject.toml)
lock:
	$(BIN)/python -m pip freeze --all --exclude-editable --exclude topolip | LC_ALL=C sort > requirements.lock

clean-results:
	rm -rf results book/notebooks _build

clean: clean-results
	rm -rf $(VENV) $(LINT) .ci/node_modules
