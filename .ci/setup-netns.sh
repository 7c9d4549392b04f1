#!/usr/bin/env bash
# Install iproute2 (`ip`, `ss`) so tests/launch/test_netns_launch.py and
# tests/partition/test_distributed_netns.py can make network
# namespaces. Idempotent; needs root and network to the Debian mirrors (as CI has).
# The tests themselves create and delete their namespaces; nothing is configured system-wide.
set -euo pipefail
if command -v ip >/dev/null && command -v ss >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-netns: need root to apt-get install iproute2" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends iproute2 >/dev/null
