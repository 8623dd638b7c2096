# One entry point per job. `make test` and `make demo` set everything up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test pytest lint typecheck fmt wheel-smoke bench golden accuracy calibrate docs durations clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,plot,ray]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/roofline analyze llama-3.1-8b h100 --prompt 4k --output 1k --batch 1

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy (non-strict) on the whole package (no module skipped: tests/test_structure.py)
typecheck: $(STAMP)
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The four checks run side by side, each target's output printed whole when it ends
# (--output-sync): lint and mypy (about 9 CPU-s from a fresh clone, 0.3 s with its cache) and the
# wheel smoke test (about 5 CPU-s) fill the time pytest's workers wait (Ray's start, the browser).
# Any one failing fails `make test` (exit 2) after the others finish. On 2 cores, a fresh clone
# with the venv built and no mypy cache: 73.0, 73.4 and 75.7 s (121-127 CPU-s), and 81.5 and
# 82.1 s (137-140 CPU-s) minutes later on the same machine (2026-12-07, AMD EPYC; 1,781 tests).
test: $(STAMP)
	$(MAKE) -s -j4 --output-sync=target lint typecheck pytest wheel-smoke

pytest: $(STAMP)
	$(BIN)/pytest -n auto --dist worksteal

# Rewrite tests/durations.json (each slow test's CPU seconds, its subprocesses included), from
# which tests/conftest.py starts the longest tests first, dealt across the workers: after adding
# or speeding up a slow test.
durations: $(STAMP)
	RECORD_DURATIONS=1 $(BIN)/pytest -n auto --dist worksteal

# Build the wheel, install it into a fresh venv and prove the catalogs ship inside it. The venv
# gets no pip of its own (ensurepip: about 4 CPU-s); the project's pip installs into it, without
# compiling every installed module to bytecode (numpy's and the rest: 8.9 -> 3.6 CPU-s; the one
# command run compiles what it imports).
wheel-smoke: $(STAMP)
	rm -rf dist .smoke
	$(BIN)/python -m pip wheel -q --no-deps -w dist .
	$(PYTHON) -m venv --without-pip .smoke
	$(BIN)/python -m pip --python .smoke/bin/python install -q --no-compile dist/roofline-*.whl
	cd /tmp && $(CURDIR)/.smoke/bin/roofline hardware list --format json \
		| $(CURDIR)/.smoke/bin/python -c "import json,sys; d=json.load(sys.stdin); n=len(d['hardware']); assert n >= 22, n; print(f'wheel-smoke: {n} accelerators from the installed wheel')"
	rm -rf .smoke

# Rewrite tests/golden/*.json (the JSON key contracts) and their hashes (MANIFEST.sha256, which
# tests/test_golden.py checks: a golden changes only here), then review the diff.
golden: $(STAMP)
	UPDATE_GOLDEN=1 $(BIN)/pytest tests/test_golden.py

# Regenerate every figure, code block and chart of the documents from the commands that print
# them (cog blocks in HTML comments; docs/docgen.py has the helpers, tests/test_docs.py fails
# naming a stale line). To add a section: write the prose, put each code block and each quoted
# figure in a cog block (`block(...)`, `data(...)`, an `assert` for each comparison the prose
# makes; see the top of docs/COMMANDS.md), then `make docs` and commit the result.
DOCS := README.md docs/COMMANDS.md docs/API.md docs/METRICS.md benchmarks/README.md
docs: $(STAMP)
	DOCGEN_IMAGES=1 $(BIN)/python -m cogapp -r -P -p "from docs.docgen import *" $(DOCS)
	$(BIN)/python docs/make_report_png.py  # docs/report.png: needs apt's chromium and chromium-driver

# Rewrite the serving cases' errors in and out of sample (validation/serving_errors.csv: both
# serving files, ~30 s), the error bands (hardware/bands.json) and docs/ACCURACY.md with the
# tables `roofline validate` prints now. The "before" figures (validation/serving_before.csv,
# commit 165ff4a) are fixed: `python validation/serving_before.py` rewrites them.
accuracy: $(STAMP)
	$(BIN)/python validation/serving_crossval.py
	$(BIN)/python validation/bands.py
	$(BIN)/python validation/accuracy_doc.py

# Refit the kernel curves (hardware/kernels.yaml, validation/kernel_gemm_sample.csv,
# docs/kernel_efficiency.svg) from aiconfigurator-core's measured kernel timings, in a venv of
# its own (CAL_VENV) so the package never enters the project's; then the case-level fit.
CAL_VENV ?= .venv-calibrate
calibrate: $(STAMP)
	test -x $(CAL_VENV)/bin/python || $(PYTHON) -m venv $(CAL_VENV)
	$(CAL_VENV)/bin/python -m pip install -q -e ".[calibrate]"
	$(CAL_VENV)/bin/python validation/calibrate_kernels.py
	$(CAL_VENV)/bin/python validation/calibrate_links.py
	$(CAL_VENV)/bin/python validation/calibrate_amd_kernels.py --write
	$(BIN)/python validation/calibrate.py --write
	$(BIN)/python validation/serving_crossval.py
	$(BIN)/python validation/bands.py
	$(BIN)/python validation/accuracy_doc.py

# Time everything; RECORD=1 rewrites the snapshot the README quotes (benchmarks/results.json),
# else the figures go to the untracked benchmarks/results.local.json.
bench: $(STAMP)
	RECORD=$(RECORD) $(BIN)/python benchmarks/bench.py

clean:
	rm -rf $(VENV) .venv-calibrate .smoke dist build *.egg-info .pytest_cache .ruff_cache .mypy_cache .hypothesis
