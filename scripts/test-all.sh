#!/usr/bin/env bash
# The whole test suite: the tox matrix. Every CPython 3.10-3.13 that pyenv has here, `typing`,
# `lint`, `sdist` (the unpacked sdist runs its own tests), the real-Pi envs `pi` (Pi 1.6.0 on
# node 22) and `pi-legacy` (Pi 0.74.2 on the machine's node 20), whose Pi and node come from npm
# through scripts/install-pi.sh, and `web`
# (the web example in Debian's Chromium, scripts/install-browser.sh).
# Extra arguments go to tox (e.g. `-e py311,lint`).
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
if [ ${#envs[@]} -eq 0 ]; then
  # No pyenv: test on the python3 at hand.
  envs+=("py$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')")
fi
export PATH

tools=.venv-tools
if [ ! -x "$tools/bin/tox" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check 'tox>=4.11,<5'
fi

env_list="$(IFS=,; echo "${envs[*]}"),typing,lint,sdist,pi,pi-legacy,web"
if [ $# -gt 0 ]; then
  exec "$tools/bin/tox" run "$@"
fi
echo "tox envs: $env_list"
exec "$tools/bin/tox" run -e "$env_list"
