#!/usr/bin/env bash
# install-sshd.sh: Debian's OpenSSH server and client, for the remote-Pi (ssh -L) tests.
# Does nothing when both are there. Installing needs root (apt-get); otherwise it says what to
# run and fails. The tests start their own sshd on 127.0.0.1 with a throwaway config and keys;
# this script never starts or configures the system's sshd.
set -euo pipefail
if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-sshd.sh: sshd is missing; run as root: apt-get install openssh-server openssh-client" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# policy-rc.d keeps the package from starting the system sshd (only our test sshd runs).
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  made_policy=1
fi
apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
if [ "$made_policy" -eq 1 ]; then
  rm -f "$policy"
fi
