#!/usr/bin/env bash
# install-browser.sh: Debian's Chromium and ChromeDriver, for the web page's browser tests.
# Does nothing when both are on PATH. Installing needs root (apt-get); otherwise it says what to
# run and fails.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-browser.sh: Chromium is missing; run as root: apt-get install chromium chromium-driver" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq chromium chromium-driver >/dev/null
