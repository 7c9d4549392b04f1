#!/usr/bin/env bash
# Build ParHIP's shared interface library (libparhip_interface.so, `bgl partition --distributed
# --engine parhip`) from the kahip source distribution on PyPI: cmake -DPARHIP=ON -D64BITMODE=ON,
# only the parhip_interface target, against the Open MPI that .ci/setup-mpi.sh installs (run that
# first; this script runs it when mpicxx is missing).  The library goes to $BGL_PARHIP_DIR, default
# ~/.cache/bgl/parhip-3.25/, written under a temporary name and renamed: an interrupted build leaves
# nothing a loader would pick up.  Idempotent; about 5-10 minutes of compiling on 2 cores, once per
# machine.  Needs cmake, g++ and network to PyPI; the first argument is a Python venv with pip
# (default .venv next to this repository).
set -euo pipefail
version=3.25
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$repo/.venv}"
dest="${BGL_PARHIP_DIR:-$HOME/.cache/bgl/parhip-$version}"
if [ -f "$dest/libparhip_interface.so" ]; then
  exit 0
fi
if ! command -v mpicxx >/dev/null; then
  bash "$repo/.ci/setup-mpi.sh" "$venv"
fi
for tool in cmake g++ make; do
  command -v "$tool" >/dev/null || { echo "setup-parhip: $tool is missing (apt-get install cmake g++ make)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" -m pip download -q --no-deps --no-binary :all: "kahip==$version" -d "$work"
tar -xzf "$work/kahip-$version.tar.gz" -C "$work"
src="$work/kahip-$version"
# Portable code (no -march=native: the library may be built on one machine kind and run on another).
cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DPARHIP=ON -D64BITMODE=ON \
  -DNONATIVEOPTIMIZATIONS=ON >"$work/cmake.log" 2>&1 || { tail -20 "$work/cmake.log" >&2; exit 1; }
make -C "$src/build" -j"$(nproc)" parhip_interface >"$work/make.log" 2>&1 || { tail -20 "$work/make.log" >&2; exit 1; }
built="$(find "$src/build" -name libparhip_interface.so | head -1)"
[ -n "$built" ] || { echo "setup-parhip: the build made no libparhip_interface.so" >&2; exit 1; }
mkdir -p "$dest"
cp "$built" "$dest/libparhip_interface.so.tmp.$$"
mv "$dest/libparhip_interface.so.tmp.$$" "$dest/libparhip_interface.so"
echo "setup-parhip: built $dest/libparhip_interface.so"
