"""The Pi install cache: installed into a temporary directory, moved into place atomically, and
verified against a manifest before every use.

Standard library only: ``scripts/install-pi.sh`` runs this file as a script (``--help``), so the
repository's tests and ``pi_ask_sdk.testing.realpi.install_pi()`` install and check Pi the same way.

A flavour's directory (``<cache>/node`` or ``<cache>/node-legacy``) holds the lock files it was
installed from, ``node_modules`` and ``.pi-ask-manifest.json``: the sha256 of the lock files (the
stamp), the size of every installed file, and the sha256 of the files Pi runs first (its
``package.json`` and CLI code). A missing, empty, truncated or changed file, or a stamp that is
not the shipped lock files', makes the install stale: ``ensure`` then installs it again, once.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

__all__ = [
    "FLAVOUR_DIRS",
    "MANIFEST",
    "CacheFlavour",
    "CacheProblem",
    "Problem",
    "ensure",
    "locks_dir",
    "npm_command",
    "verify",
    "wanted_stamp",
]

CacheFlavour = Literal["current", "legacy"]
Problem = Literal[
    "not_installed", "stale", "npm_missing", "npm_failed", "npm_timeout", "cache_unusable"
]
"""``pi_ask_sdk.testing.errors.PiInstallProblem`` (this module imports nothing of the package; mypy
checks that the two agree where ``install_pi`` passes one on as the other)."""

FLAVOUR_DIRS: dict[CacheFlavour, str] = {"current": "node", "legacy": "node-legacy"}
MANIFEST = ".pi-ask-manifest.json"
_LOCKS = ("package.json", "package-lock.json")
_PACKAGE = "node_modules/@earendil-works/pi-coding-agent"
# What Pi runs first, hashed (everything else is checked by size).
_HASHED: dict[CacheFlavour, tuple[str, ...]] = {
    "current": (f"{_PACKAGE}/package.json", f"{_PACKAGE}/dist/bundle"),
    "legacy": (f"{_PACKAGE}/package.json", f"{_PACKAGE}/dist/cli.js"),
}
_NPM_ARGS = ("ci", "--no-audit", "--no-fund", "--loglevel=error", "--engine-strict=false")


class CacheProblem(Exception):
    """Installing or verifying failed: ``problem`` says how, ``path`` where, ``command`` what
    (re)installs it."""

    def __init__(self, problem: Problem, path: Path, message: str, command: str) -> None:
        super().__init__(f"{message} (cache: {path}; install command: {command})")
        self.problem: Problem = problem
        self.path = path
        self.command = command


def locks_dir(flavour: CacheFlavour) -> Path:
    """The shipped lock files of ``flavour`` (``npm/<dir>/`` beside this module)."""
    return Path(__file__).resolve().parent / "npm" / FLAVOUR_DIRS[flavour]


def wanted_stamp(flavour: CacheFlavour) -> str:
    locks = locks_dir(flavour)
    return hashlib.sha256(b"".join((locks / name).read_bytes() for name in _LOCKS)).hexdigest()


def npm_command(npm: str = "npm") -> str:
    return " ".join((npm, *_NPM_ARGS))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _files(directory: Path, relative: str) -> Iterator[str]:
    """The regular files at or under ``directory / relative`` (paths relative to directory)."""
    top = directory / relative
    if top.is_file():
        yield relative
        return
    for root, _dirs, names in os.walk(top):
        for name in names:
            yield os.path.relpath(os.path.join(root, name), directory)


def _manifest(directory: Path, flavour: CacheFlavour, stamp: str) -> dict[str, object]:
    sizes = {path: os.lstat(directory / path).st_size for path in _files(directory, "node_modules")}
    hashes = {
        path: _sha256(directory / path)
        for relative in _HASHED[flavour]
        for path in _files(directory, relative)
    }
    return {"version": 1, "stamp": stamp, "sizes": sizes, "sha256": hashes}


def verify(directory: Path, flavour: CacheFlavour) -> str | None:
    """Why the install in ``directory`` cannot be used as it is, or None when it can."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except FileNotFoundError:
        return "it is not installed (no manifest)"
    except (OSError, ValueError) as error:
        return f"its manifest is unreadable ({error})"
    if not isinstance(manifest, dict) or manifest.get("version") != 1:
        return "its manifest is not one this version writes"
    if manifest.get("stamp") != wanted_stamp(flavour):
        return "it was installed from other lock files than the ones shipped"
    sizes, hashes = manifest.get("sizes"), manifest.get("sha256")
    if not isinstance(sizes, dict) or not isinstance(hashes, dict) or not hashes:
        return "its manifest is incomplete"
    for path, size in sizes.items():
        try:
            actual = os.lstat(directory / path).st_size
        except OSError:
            return f"{path} is missing"
        if actual != size:
            return f"{path} has {actual} bytes, not the {size} it was installed with"
    for path, digest in hashes.items():
        try:
            if _sha256(directory / path) != digest:
                return f"{path} changed since it was installed"
        except OSError:
            return f"{path} is missing"
    return None


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Holds the lock file beside ``directory`` (creating the cache's directory first)."""
    import fcntl

    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        handle = (directory.parent / f".{directory.name}.lock").open("a")
    except OSError as error:
        raise _unusable(directory, error) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unusable(directory: Path, error: OSError) -> CacheProblem:
    why = error.strerror or str(error)
    where = f" ({error.filename})" if error.filename and error.filename != str(directory) else ""
    return CacheProblem(
        "cache_unusable",
        directory,
        f"the cache directory {directory} cannot be created or written: {why}{where}",
        npm_command(),
    )


def ensure(
    flavour: CacheFlavour, directory: Path, *, timeout: float = 600, npm: str | None = None
) -> str | None:
    """Make ``directory`` a verified install of ``flavour``; a no-op when it is one.

    Returns why it was (re)installed (None when nothing was done). Concurrent calls (other
    processes too) wait for each other on a lock file beside ``directory``. Raises
    ``CacheProblem`` when ``npm`` is missing, fails or outlasts ``timeout`` seconds, when a
    fresh install does not verify, or when the cache's directory cannot be created or written
    (``cache_unusable``)."""
    why = verify(directory, flavour)
    if why is None:
        return None
    npm = npm or shutil.which("npm")
    if npm is None:
        raise CacheProblem(
            "npm_missing",
            directory,
            f"npm is not on PATH: install node and npm to install Pi ({why})",
            npm_command(),
        )
    with _locked(directory):
        why = verify(directory, flavour)  # another process may have installed it meanwhile
        if why is None:
            return None
        _clear_leftovers(directory)
        _install(flavour, directory, npm, timeout)
        problem = verify(directory, flavour)
        if problem is not None:
            raise CacheProblem(
                "stale", directory, f"a fresh install does not verify: {problem}", npm_command(npm)
            )
    return why


def _clear_leftovers(directory: Path) -> None:
    """Temporary and replaced directories of installs that were killed (we hold the lock)."""
    for stale in directory.parent.glob(f".{directory.name}.*-*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


def _install(flavour: CacheFlavour, directory: Path, npm: str, timeout: float) -> None:
    """``npm ci`` into a temporary directory beside ``directory``, then swap it in."""
    parent = directory.parent
    try:
        temporary = Path(tempfile.mkdtemp(prefix=f".{directory.name}.new-", dir=parent))
    except OSError as error:
        raise _unusable(directory, error) from None
    try:
        try:
            for name in _LOCKS:
                shutil.copyfile(locks_dir(flavour) / name, temporary / name)
        except OSError as error:  # (a full disk, a quota)
            raise _unusable(directory, error) from None
        _run_npm(npm, temporary, directory, timeout)
        manifest = _manifest(temporary, flavour, wanted_stamp(flavour))
        (temporary / MANIFEST).write_text(json.dumps(manifest, separators=(",", ":")))
        old = None
        if directory.exists() or directory.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=parent))
            os.replace(directory, old / "install")
        os.replace(temporary, directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _run_npm(npm: str, cwd: Path, directory: Path, timeout: float) -> None:
    command = [npm, *_NPM_ARGS]
    try:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its whole process group is ours to kill
        )
    except OSError as error:
        raise CacheProblem(
            "npm_failed", directory, f"npm could not be started: {error}", npm_command(npm)
        ) from error
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        raise CacheProblem(
            "npm_timeout",
            directory,
            f"npm ci did not finish in {timeout:g} s (is the npm registry reachable?)",
            npm_command(npm),
        ) from None
    except BaseException:
        # Ctrl-C (KeyboardInterrupt) or any other way out: npm runs in a session of its own, so
        # the terminal's SIGINT never reached it; left alone it would go on writing into the
        # temporary directory (~30 s) after that directory is removed and this process is gone.
        _stop_group(proc)
        raise
    if proc.returncode != 0:
        raise CacheProblem(
            "npm_failed",
            directory,
            f"npm ci failed (exit status {proc.returncode}):\n{output.rstrip()}\n",
            npm_command(npm),
        )


_TERM_GRACE = 2.0
"""Seconds npm gets to exit on SIGTERM before its process group is killed."""


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """End npm and every process it started (its process group), within a bounded time: SIGTERM,
    then SIGKILL after ``_TERM_GRACE`` seconds; then reap it."""
    for sig, grace in ((signal.SIGTERM, _TERM_GRACE), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            # (communicate, not wait: it drains the pipe npm may be blocked writing to)
            proc.communicate(timeout=grace if grace is not None else _TERM_GRACE)
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, kill at once
            pass
        break
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # what npm started and left behind when it exited
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_TERM_GRACE)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="install-pi",
        description="Install the pinned Pi into <cache>/node (or node-legacy) from the shipped "
        "lock files, verified; a no-op when the install there verifies.",
    )
    parser.add_argument("--flavour", choices=("current", "legacy"), default="current")
    parser.add_argument("--cache", type=Path, required=True, help="the cache directory")
    parser.add_argument("--timeout", type=float, default=600, help="bound of npm ci (seconds)")
    args = parser.parse_args(argv)
    flavour: CacheFlavour = "legacy" if args.flavour == "legacy" else "current"
    try:
        ensure(flavour, args.cache / FLAVOUR_DIRS[flavour], timeout=args.timeout)
    except CacheProblem as error:
        print(f"install-pi: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
