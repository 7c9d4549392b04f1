# The two commands of the README: `make demo` and `make test`.  Each bootstraps .venv.
# dgl 2.1.0 imports only with torch 2.2.1 / numpy<2, so the `dgl` extra pins them; numba
# is installed in the same pip command so it cannot pull numpy 2.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bgl-installed
export DGLBACKEND := pytorch

.PHONY: demo test test-extended venv bench wheels clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e ".[dgl,pyg,test]" numba "numpy<2"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bgl demo

test: $(STAMP)
	$(PY) -m pytest -q tests -m "not extended" --durations=25

# The long failure-injection and soak tests `make test` leaves out (see pyproject's markers).
test-extended: $(STAMP)
	$(PY) -m pytest -q tests -m extended --durations=25

bench: $(STAMP)
	$(PY) bench/run_all.py

# Wheels for the GPU machine (Python 3.12, no network): bench/gpu_check.sh installs them.
wheels:
	$(PY) -m pip download -q --only-binary=:all: --python-version 3.12 \
	  --platform manylinux_2_28_x86_64 -d .wheels pyzmq pymetis

clean:
	rm -rf build dist *.egg-info .pytest_cache
