"""What a release carries: one version, said in the CHANGELOG; a wheel that holds the two
packages, the stub package and the files they read at run time, and nothing else (no tests, no
caches, no stray file); a repository with no big binary in it.

The wheel's test reads the wheel ``$PI_ASK_WHEEL`` names: ``tox -e sdist``
(``scripts/check-sdist.py``) builds one from a clean clone and runs the unpacked sdist's tests
with it. The big-file test needs a git checkout (``git ls-files``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import pi_ask_core
import pi_ask_sdk

ROOT = Path(__file__).resolve().parents[1]
VERSION = pi_ask_sdk.__version__

BIGGEST = 1024 * 1024
"""No file the repository tracks may be larger (bytes): binaries come from a package index."""

DATA = {
    "pi_ask_core/py.typed",
    "pi_ask_sdk/py.typed",
    # the relay, loaded into Pi with -e (pi-ask relay-path), its tsconfig and its protocol
    "pi_ask_sdk/transports/relay/pi-ask-relay.ts",
    "pi_ask_sdk/transports/relay/tsconfig.json",
    "pi_ask_sdk/transports/relay/README.md",
    # the stand-in host extension (pi-ask standin-path)
    "pi_ask_sdk/testing/standin/pi-ask-standin.ts",
    "pi_ask_sdk/testing/standin/tsconfig.json",
    # the pinned npm installs of Pi (pi-ask try, the real-Pi kit)
    "pi_ask_sdk/testing/realpi/npm/node/package.json",
    "pi_ask_sdk/testing/realpi/npm/node/package-lock.json",
    "pi_ask_sdk/testing/realpi/npm/node-legacy/package.json",
    "pi_ask_sdk/testing/realpi/npm/node-legacy/package-lock.json",
    # the stub-only package of the raw JSON payloads
    "pi_ask_wire-stubs/__init__.pyi",
    "pi_ask_wire-stubs/py.typed",
}
"""Every file of the wheel that is neither a module of the packages, a guide nor metadata."""

DIST_INFO = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"}


def wheel_contents() -> set[str]:
    """What the wheel must hold, exactly: every module of the two packages in this tree, each
    guide of ``docs/`` (``pi-ask docs``; not the site's API pages), ``DATA`` and its metadata."""
    modules = {
        path.relative_to(ROOT).as_posix()
        for package in ("pi_ask_core", "pi_ask_sdk")
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    guides = {f"pi_ask_sdk/docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    dist_info = {f"pi_ask_sdk-{VERSION}.dist-info/{name}" for name in DIST_INFO}
    return modules | guides | DATA | dist_info


@pytest.fixture(scope="module")
def wheel() -> list[str]:
    path = os.environ.get("PI_ASK_WHEEL")
    if not path:
        pytest.skip("no wheel given: tox -e sdist builds one and runs this with PI_ASK_WHEEL")
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def test_the_wheel_holds_the_packages_and_their_files_and_nothing_else(wheel: list[str]) -> None:
    names = set(wheel)
    assert len(names) == len(wheel), "a file is in the wheel twice"
    expected = wheel_contents()
    assert {"stray": sorted(names - expected), "missing": sorted(expected - names)} == {
        "stray": [],
        "missing": [],
    }


def test_the_wheel_holds_no_tests_and_no_caches(wheel: list[str]) -> None:
    # (the exact list above says so too; this says it in words when it fails)
    assert [name for name in wheel if name.startswith("tests/") or "/tests/" in name] == []
    assert [name for name in wheel if "__pycache__" in name or name.endswith(".pyc")] == []


def test_the_version_is_said_once_and_has_its_changelog_section() -> None:
    assert pi_ask_core.__version__ == VERSION
    assert metadata.version("pi-ask-sdk") == VERSION
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"\n## [{VERSION}] - " in changelog
    assert changelog.index("\n## [Unreleased]") < changelog.index(f"\n## [{VERSION}]")


def git_checkout() -> bool:
    """Whether this tree is a git checkout's top level (an unpacked sdist is not)."""
    if shutil.which("git") is None:
        return False
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return top.returncode == 0 and Path(top.stdout.strip()).resolve() == ROOT


needs_git = pytest.mark.skipif(
    not git_checkout(), reason="not a git checkout (an unpacked sdist): no tracked files to list"
)


@needs_git
def test_no_tracked_file_is_over_1_mib() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=30, check=True
    )
    names = [name for name in listed.stdout.decode().split("\0") if name]
    assert len(names) > 100
    sizes = {name: (ROOT / name).stat().st_size for name in names if (ROOT / name).is_file()}
    assert [f"{name}: {size} bytes" for name, size in sizes.items() if size > BIGGEST] == []


@needs_git
def test_wheels_are_never_tracked() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", "py_spy-0.4.3-py2.py3-none-any.whl"],
        cwd=ROOT,
        timeout=30,
        check=False,
    )
    assert ignored.returncode == 0, ".gitignore does not ignore *.whl"
