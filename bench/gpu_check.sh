#!/usr/bin/env bash
# GPU check for bgl: one script, < 8 minutes, on a machine with an NVIDIA GPU and no network.
#
#   bench/gpu_check.sh            # full check on the GPU (needs `make wheels` run beforehand
#                                 # on a networked machine, for pyzmq/pymetis)
#   bench/gpu_check.sh --cpu      # dry run: tiny graph on the CPU, < 60 s (run by the test suite)
#   PYTHON=/path/python OUT=/dir bench/gpu_check.sh [extra bench/gpu/e2e.py args]
#
# Steps: make `bgl` importable (installed already / offline wheels + editable install /
# a symlinked package tree on PYTHONPATH), run the GPU unit tests when pytest is present,
# then bench/gpu/e2e.py, which writes $OUT/gpu_e2e.md (default bench/out/).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON=${PYTHON:-python3}
OUT_DIR=${OUT:-$REPO/bench/out}
mkdir -p "$OUT_DIR"
export DGLBACKEND=pytorch PYTHONUNBUFFERED=1
CPU_MODE=0
for a in "$@"; do [ "$a" = "--cpu" ] && CPU_MODE=1; done

importable() { "$PYTHON" -c "import bgl.sampler.local, bgl.cache, bgl.rmat, bgl.nn, bgl.cache.gpu_gather" 2>/dev/null; }
link_tree() {
  # The distribution maps top-level folders into bgl.* (sampler/ -> bgl.sampler, ...);
  # mirror that with symlinks so a plain PYTHONPATH works without installing anything.
  TREE=$(mktemp -d /tmp/bgl_tree.XXXXXX)
  mkdir "$TREE/bgl"
  for f in "$REPO"/bgl/*; do ln -s "$f" "$TREE/bgl/$(basename "$f")"; done
  for sub in sampler cache partition launch; do ln -s "$REPO/$sub" "$TREE/bgl/$sub"; done
  ln -s "$REPO/data" "$TREE/bgl/data"
  export PYTHONPATH="$TREE${PYTHONPATH:+:$PYTHONPATH}"
  trap 'rm -rf "$TREE"' EXIT
}

if [ "$CPU_MODE" = 0 ] && compgen -G ".wheels/*.whl" >/dev/null \
   && ! "$PYTHON" -c "import zmq, pymetis" 2>/dev/null; then
  echo "[gpu_check] installing offline wheels from .wheels/"
  "$PYTHON" -m pip install -q --no-index --no-deps .wheels/*.whl || echo "[gpu_check] wheel install failed; continuing"
fi
if [ "${BGL_GPU_CHECK_FORCE_TREE:-0}" = 1 ]; then
  link_tree   # used by the test suite to exercise the no-install route
elif ! importable; then
  if [ "$CPU_MODE" = 0 ]; then
    "$PYTHON" -m pip install -q --no-deps --no-build-isolation -e . 2>/dev/null \
      || echo "[gpu_check] editable install failed; using a symlinked package tree"
  fi
  importable || link_tree
fi
importable || { echo "[gpu_check] cannot import bgl (see above)"; "$PYTHON" -c "import bgl.sampler.local, bgl.cache, bgl.rmat"; exit 1; }

if [ "$CPU_MODE" = 0 ]; then
  "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || { echo "[gpu_check] no CUDA device visible; use --cpu for the dry run"; exit 2; }
  nvidia-smi -L || true
  if "$PYTHON" -c "import pytest" 2>/dev/null; then
    # GPU paths of the unit tests (UVA gather, CUDA cache); bounded so the benchmark keeps its time.
    echo "[gpu_check] GPU unit tests"
    timeout 60 "$PYTHON" -m pytest -q -p no:cacheprovider tests/bgl/loader/test_gpu_gather.py tests/cache \
      2>&1 | tail -n 15 | tee "$OUT_DIR/gpu_unit_tests.txt" || true
  fi
  LIMIT=390
else
  LIMIT=110
fi
set +e
timeout "$LIMIT" "$PYTHON" bench/gpu/e2e.py --out "$OUT_DIR" "$@"
rc=$?
[ "$rc" = 124 ] && echo "[gpu_check] bench/gpu/e2e.py hit the ${LIMIT}s limit; sections finished so far are in $OUT_DIR/gpu_e2e.md"
exit "$rc"
