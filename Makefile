# The two commands of the README: `make demo` and `make test`.  Each bootstraps .venv (so does `make docs`).
# dgl 2.1.0 imports only with torch 2.2.1 / numpy<2, so the `dgl` extra pins them; numba
# is installed in the same pip command so it cannot pull numpy 2.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bgl-installed
export DGLBACKEND := pytorch

# `make test` runs two lanes (docs/ARCHITECTURE.md, "Supported stacks"): `pinned` is .venv above;
# `current` is the stack users move to: no DGL, the newest torch, numpy 2, numba and PyG that
# install, in its own venv.  Both lanes do not fit CI's time twice over, so its Python rotates
# by day: 3.12 on even days of the year (UTC), 3.13 on odd ones; CURRENT=3.13 picks one,
# LANES=pinned runs only the first (e.g. on a machine without Python 3.12/3.13).
LANES ?= pinned current
ifeq ($(origin CURRENT),undefined)
CURRENT := $(if $(filter 0,$(shell expr $$(date -u +%j) % 2)),3.12,3.13)
endif
CURRENT_VENV := .venv-current-$(CURRENT)
CURRENT_STAMP := $(CURRENT_VENV)/.bgl-installed
LANE_pinned := "pinned DGL=$(PY)"
LANE_current := "current stack, no DGL=$(CURRENT_VENV)/bin/python"
LANE_STAMP_pinned := $(STAMP)
LANE_STAMP_current := $(CURRENT_STAMP)
# What the suite needs beyond pip's packages (Open MPI, PT-Scotch, mpi4py: .ci/setup-mpi.sh, root and
# network as CI has), installed into each lane's venv before pytest collects anything: a test module that
# imports mpi4py at its top would otherwise skip on a fresh venv, and `--strict-suite` fails a run on such
# a skip (tests/conftest.py).  `make demo` does not need them.
TOOLS_pinned := $(VENV)/.bgl-test-tools
TOOLS_current := $(CURRENT_VENV)/.bgl-test-tools

.PHONY: demo test test-extended docs venv bench wheels clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e ".[dgl,pyg,test]" numba "numpy<2"
	touch $(STAMP)

# python3.X on PATH if it runs (a pyenv shim may not), else pyenv's build of it.
$(CURRENT_STAMP): pyproject.toml
	test -x $(CURRENT_VENV)/bin/python || { \
	  for py in python$(CURRENT) $(wildcard $(HOME)/.pyenv/versions/$(CURRENT).*/bin/python$(CURRENT)); do \
	    $$py -c "" 2>/dev/null && found=$$py && break; done; \
	  test -n "$$found" || { echo "the current-stack lane needs Python $(CURRENT) (python$(CURRENT));" \
	    "make test LANES=pinned runs the pinned lane only" >&2; exit 1; }; \
	  $$found -m venv $(CURRENT_VENV); }
	$(CURRENT_VENV)/bin/python -m pip install -q --upgrade pip setuptools wheel
	$(CURRENT_VENV)/bin/python -m pip install -q --upgrade -e ".[pyg,test]" torch numba "numpy>=2"
	touch $@

# numba's cache filled with the kernels `bgl demo` uses (`bgl compile`: one quiet demo epoch), once per
# install and again when a kernel source changes, so the first `make demo` loads its kernels instead of
# compiling them in its first batch (issue #56; docs/resume-and-first-run.md says what it costs).
KERNELS := $(VENV)/.bgl-kernels
KERNEL_SOURCES := $(shell find bgl sampler cache partition -name '*.py' -not -path '*/__pycache__/*')
# A failed warm-up costs only the speed-up: the demo then compiles on first use (and make retries next time).
$(KERNELS): $(STAMP) $(KERNEL_SOURCES)
	$(VENV)/bin/bgl compile && touch $@ || echo "bgl compile failed (above): the first run compiles its kernels" >&2

venv: $(STAMP) $(KERNELS)

# The suite's kernel variants (.ci/suite-kernels.txt) compiled into numba's cache once per lane's venv
# (the cache is per Python version), a few processes side by side: each lane then loads them instead of
# compiling each in whichever test touches it first (.ci/warm_kernels.py; docs/testing.md says what it
# saves).  A failure costs only the speed-up: the lane compiles what is missing (and make retries).
%/.bgl-test-kernels: %/.bgl-installed .ci/warm_kernels.py .ci/suite-kernels.txt $(KERNEL_SOURCES)
	$*/bin/python .ci/warm_kernels.py && touch $@ || echo "warm_kernels failed (above): the lane compiles its kernels" >&2

# ParHIP's library (.ci/setup-parhip.sh: minutes of compiling, once per machine, under ~/.cache/bgl) is built
# here too, so neither lane's workers build it inside a test; a failure leaves it to the tests' fixture.
PARHIP_SETUP = bash .ci/setup-parhip.sh $(1) || echo "setup-parhip failed (above): the partition tests build ParHIP" >&2

$(TOOLS_pinned): $(STAMP) .ci/setup-mpi.sh .ci/setup-parhip.sh
	bash .ci/setup-mpi.sh $(VENV)
	$(call PARHIP_SETUP,$(VENV))
	touch $@

$(TOOLS_current): $(CURRENT_STAMP) .ci/setup-mpi.sh .ci/setup-parhip.sh
	bash .ci/setup-mpi.sh $(CURRENT_VENV)
	$(call PARHIP_SETUP,$(CURRENT_VENV))
	touch $@

demo: $(STAMP) $(KERNELS)
	$(VENV)/bin/bgl demo

# Each lane's summary, then their sum as pytest's closing line; a failure in either fails.
# --strict-suite: a skip outside the allowed reasons (no GPU, DGL absent in the current lane, Python
# version), or an entry left in /tmp, fails the lane.  Each lane runs on two pytest-xdist workers, whole
# files each, the heaviest first (tests/suite_schedule.py; docs/testing.md has the figures).
WORKERS ?= 2
test: $(foreach lane,$(LANES),$(LANE_STAMP_$(lane)) $(TOOLS_$(lane)) $(dir $(LANE_STAMP_$(lane))).bgl-test-kernels)
	$(PYTHON) .ci/lanes.py $(foreach lane,$(LANES),--lane $(LANE_$(lane))) -- -q tests -m "not extended" --strict-suite --durations=25 -n $(WORKERS) --dist loadfile

# The long failure-injection and soak tests `make test` leaves out (see pyproject's markers), in both lanes.
test-extended: $(foreach lane,$(LANES),$(LANE_STAMP_$(lane)) $(TOOLS_$(lane)) $(dir $(LANE_STAMP_$(lane))).bgl-test-kernels)
	$(PYTHON) .ci/lanes.py $(foreach lane,$(LANES),--lane $(LANE_$(lane))) -- -q tests -m extended --durations=25

# The documentation site from docs/ (mkdocs.yml) into site/: offline, every warning an error.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(PY) bench/run_all.py

# Wheels for the GPU machine (Python 3.12, no network): bench/gpu_check.sh installs them.
wheels:
	$(PY) -m pip download -q --only-binary=:all: --python-version 3.12 \
	  --platform manylinux_2_28_x86_64 -d .wheels pyzmq pymetis

clean:
	rm -rf build dist site *.egg-info .pytest_cache
