# Two commands for a newcomer: `make book` and `make test`. Both create .venv and install the
# exact lock (requirements.lock) on first use.
PYTHON  ?= $(shell command -v python3.11 || command -v python3)
VENV    := .venv
BIN     := $(VENV)/bin
PROFILE ?= quick
PARAMS  ?=
PYTEST_ARGS ?=

.PHONY: install book run test test-fast browser-test lint bench lock clean clean-results

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
browser-test: install
	$(BIN)/python -m pytest -m browser tests/test_browser.py $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check topolip tests benchmarks notebooks

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
	rm -rf $(VENV)
