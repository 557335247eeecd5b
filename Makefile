# hwapprox: two commands do everything on a fresh clone.
#   make demo   create .venv, install, run the main job on the embedded example
#   make test   create .venv, install with dev extras, run the whole test suite
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
JOBS   ?= 2

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/hwapprox demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest -n $(JOBS) --dist loadgroup

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(VENV)/.installed
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
