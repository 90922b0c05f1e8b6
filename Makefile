# speedaudit: the two commands are `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test install lab bench clean

# Recipes run in bash with pipefail, so that a failing pip is not hidden by the filter after it.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

# pip's output filtered to one line per package (what it fetches or unpacks, then what it installed), so a
# first install shows progress instead of minutes of silence.
# (grep's status 1, "no line matched", is fine; pip's errors go to stderr, unfiltered.)
PIP_PROGRESS := { grep --line-buffered -E '^(Collecting|Processing|Installing collected|Successfully installed)' || [ $$? = 1 ]; } | sed -u 's/^/  pip: /'

# (Re)create the virtual environment and install the project with its test extras
# whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "speedaudit needs $(PYTHON) on PATH (set PYTHON=...)"; exit 1; }
	@echo "[install 1/4] virtual environment $(VENV)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "[install 2/4] upgrading pip"
	@$(BIN)/python -m pip install --progress-bar off --upgrade pip | $(PIP_PROGRESS)
	@echo "[install 3/4] installing speedaudit with its test extras (a few minutes the first time)"
	@$(BIN)/python -m pip install --progress-bar off -e ".[test]" | $(PIP_PROGRESS)
	@echo "[install 4/4] Jupyter kernel python3 for the reports"
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)
	@echo "[install] done: the command is $(BIN)/speedaudit (or 'source $(BIN)/activate', then speedaudit)"

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m audits.report.demo

# Lint (ruff), the layer contracts (import-linter, analysing this checkout), then every test.
test: $(STAMP)
	bash scripts/system-deps.sh
	$(BIN)/ruff check .
	PYTHONPATH=$(CURDIR) $(BIN)/lint-imports
	$(BIN)/python -m pytest -q

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) reports/*.html reports/*.ipynb
