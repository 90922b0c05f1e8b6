# speedaudit: the two commands are `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test install lab bench clean

# Python writes bytecode here even where the shell says PYTHONDONTWRITEBYTECODE: the project's own modules
# (audits, stats: an editable install, so pip compiled none of them) are imported by every command, report kernel
# and test process, and without a __pycache__ each process compiles them again: 0.35 s of CPU per process
# (measured 2026-12-07), in ~400 processes of `make test`; pytest also keeps its rewritten test modules. The
# caches are git-ignored, and the suite loader skips a __pycache__ folder as it skips dot-files.
unexport PYTHONDONTWRITEBYTECODE

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

# Lint (ruff), the layer contracts (import-linter, analysing this checkout), then every test in two passes:
#  1. every test not marked `serial`, spread over TEST_WORKERS processes (pytest-xdist; `auto` = one per
#     core). --dist loadfile keeps each test file on one worker, so a module-scoped fixture (a corpus, an
#     audit, rendered pages) is built once, not once per worker; files are handed out in collection order
#     (--no-loadscope-reorder), which tests/conftest.py sorts longest first by the previous run's seconds per
#     file (kept in .pytest_cache) and, for a file without a record (every file of a fresh clone), starts with
#     the files holding a `slow` test, so the minutes-long files start first instead of last (xdist's default
#     order is most tests first);
#  2. the tests marked `serial` (they load the machine or read its load; the reason is beside each mark),
#     one at a time with no other test running.
# New tests are parallel unless marked. Both passes always run and both exit codes count; pytest's 5
# ("no test collected", e.g. no serial test is selected) is not a failure. TEST_ARGS is passed to both
# (e.g. TEST_ARGS="tests/stats"); TEST_WORKERS=0 runs the first pass in this process.
TEST_WORKERS ?= auto
TEST_ARGS    ?=
test: $(STAMP)
	bash scripts/system-deps.sh
	$(BIN)/ruff check .
	PYTHONPATH=$(CURDIR) $(BIN)/lint-imports
	@status=0; \
	echo "[test 1/2] tests not marked serial, $(TEST_WORKERS) workers"; \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not serial" --durations=30 $(TEST_ARGS) \
	  || { s=$$?; [ $$s = 5 ] || status=$$s; }; \
	echo "[test 2/2] tests marked serial, one at a time"; \
	$(BIN)/python -m pytest -q -p no:xdist -m serial --durations=10 $(TEST_ARGS) \
	  || { s=$$?; [ $$s = 5 ] || status=$$s; }; \
	exit $$status

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

# Every benchmark, each printing its targets with MET/MISSED and the load average before and after: the audit
# stages (benchmarks.run), the sandbox runner (throughput and floors per language and sandbox: benchmarks/
# bench_runner.py) and the command line (--help and validate: benchmarks/bench_cli.py). Each one runs even if an
# earlier one failed; the exit status is the first failure's.
bench: $(STAMP)
	@status=0; \
	$(BIN)/python -m benchmarks.run || status=$$?; \
	$(BIN)/python benchmarks/bench_runner.py || { s=$$?; [ $$status != 0 ] || status=$$s; }; \
	$(BIN)/python -m benchmarks.bench_cli || { s=$$?; [ $$status != 0 ] || status=$$s; }; \
	exit $$status

clean:
	rm -rf $(VENV) reports/*.html reports/*.ipynb
