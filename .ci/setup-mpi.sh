#!/usr/bin/env bash
# Install Open MPI (mpirun, mpicc), PT-Scotch with its ParMETIS-API library
# (libptscotchparmetis: ParMETIS_V3_PartKway) and mpi4py, the pieces `bgl partition --distributed`
# and tests/partition/test_distributed_*.py need.  Debian packages through apt; mpi4py (built against
# that Open MPI) and pyarrow (Parquet shards) into the venv given as the first argument (default .venv
# next to this repository).
# Idempotent; needs root and network to the Debian mirrors and PyPI (as CI has).
set -euo pipefail
venv="${1:-$(cd "$(dirname "$0")/.." && pwd)/.venv}"
have_debs() {
  command -v mpirun >/dev/null && command -v mpicc >/dev/null \
    && ls /usr/lib/*/libptscotchparmetis*.so* >/dev/null 2>&1
}
if ! have_debs; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup-mpi: need root to apt-get install openmpi-bin libopenmpi-dev libptscotch-dev" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # other jobs on the machine may hold the dpkg lock for a while
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    openmpi-bin libopenmpi-dev libptscotch-dev >/dev/null
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "setup-mpi: no Python venv at $venv (give its path as the first argument)" >&2
  exit 1
fi
if ! "$venv/bin/python" -c "import mpi4py" 2>/dev/null; then
  # mpi4py compiles against the mpicc on PATH (Open MPI above)
  "$venv/bin/python" -m pip install -q "mpi4py>=3.1"
fi
if ! "$venv/bin/python" -c "import pyarrow.parquet" 2>/dev/null; then
  # Parquet shards for `bgl ingest --distributed`; pyarrow 21+ needs numpy 2 (the dgl extra pins numpy<2)
  spec=$("$venv/bin/python" -c "import numpy; print('pyarrow>=14' if int(numpy.__version__.split('.')[0]) >= 2 else 'pyarrow>=14,<21')")
  "$venv/bin/python" -m pip install -q "$spec"
fi
