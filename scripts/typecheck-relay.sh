#!/usr/bin/env bash
# typecheck-relay.sh
#
# Type-checks the TypeScript shipped or used by pi-ask-sdk with `tsc --noEmit --strict` against Pi
# 1.6.0's own .d.ts files:
#   pi_ask_sdk/transports/relay/pi-ask-relay.ts    (config: tsconfig.json beside it)
#   pi_ask_sdk/testing/standin/pi-ask-standin.ts   (config: tsconfig.json beside it)
# Installs Pi first if needed (scripts/install-pi.sh, a no-op when up to date).
# Output: tsc diagnostics only; exit 0 when both projects type-check, non-zero otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-pi.sh"
eval "$("$root/scripts/pi-env.sh")"
tsc="$PI_NODE_MODULES/typescript/bin/tsc"
status=0
"$NODE" "$tsc" --noEmit --strict -p "$root/pi_ask_sdk/transports/relay/tsconfig.json" || status=1
"$NODE" "$tsc" --noEmit --strict -p "$root/pi_ask_sdk/testing/standin/tsconfig.json" || status=1
exit $status
