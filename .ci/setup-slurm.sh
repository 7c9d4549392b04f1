#!/usr/bin/env bash
# Install Debian's Slurm (slurm-wlm: slurmctld, slurmd, srun/sbatch/scancel) and munge so
# tests/launch/test_slurm_launch.py can run `bgl launch --backend slurm` inside a real
# allocation. The test writes its own slurm.conf and munge key in a temporary directory and
# starts/stops its own daemons; nothing here is configured or started system-wide.
# Idempotent; needs root and network to the Debian mirrors (as CI has).
set -euo pipefail
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v srun >/dev/null \
   && command -v munged >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-slurm: need root to apt-get install slurm-wlm munge" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# other jobs on the machine may hold the dpkg lock for a while
apt-get -o DPkg::Lock::Timeout=300 update -qq
# policy-rc.d: the packages' postinst must not start the system-wide daemons
had_policy=0; [ -e /usr/sbin/policy-rc.d ] && had_policy=1
if [ "$had_policy" = 0 ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; fi
trap '[ "$had_policy" = 0 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
  slurm-wlm slurmctld slurmd slurm-client munge >/dev/null
