# The two commands a newcomer needs: `make quickstart` and `make test`.
# Each creates (or reuses) a virtual environment, installs torch==2.13.0 *first* so no CUDA build
# is pulled in by a dependency, then installs genfeat with what it needs.
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.genfeat-installed

.PHONY: quickstart test test-all bench lint clean-venv

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

quickstart: $(STAMP)
	$(BIN)/genfeat data fetch ptb
	$(BIN)/genfeat run quickstart

test: $(STAMP)
	@$(BIN)/python -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "ERROR: pytest collected no tests -- refusing to call that a pass" >&2; fi; \
	exit $$rc

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m "not gpu and not browser"

bench: $(STAMP)  # the quick ones; see benchmarks/ for the long quality runs
	$(BIN)/python -m benchmarks.loop_overhead
	$(BIN)/python -m benchmarks.transformer_xl_eval_speed

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

clean-venv:
	rm -rf $(VENV)
