#!/usr/bin/env bash
# Install Debian's OpenSSH server so tests/launch/test_ssh_launch.py can run `bgl launch
# --backend ssh` for real against a throwaway sshd on 127.0.0.1 (the test starts and stops
# its own sshd with a temporary host key; nothing is configured system-wide).
# Idempotent; needs root and network to the Debian mirrors (as CI has).
set -euo pipefail
if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-sshd: need root to apt-get install openssh-server" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
# sshd refuses to start without its privilege-separation directory.
mkdir -p /run/sshd
