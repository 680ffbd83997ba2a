"""Build the sdist and wheel from a clean clone, check them as an index would, and prove the
sdist stands on its own (tox env ``sdist``).

1. The files git tracks (and new ones it does not ignore) are copied into a temporary
   directory with no ``../shared`` beside it: what a clean clone holds. ``python -m build``
   makes the sdist there, and the wheel from that sdist.
2. ``twine check --strict`` passes both (the metadata and the long description render); the
   long description is PYPI.md, starting with ``pip install pi-ask-sdk``; the sdist carries
   LICENSE, CHANGELOG.md and the spec examples (``spec/examples.json``).
3. The sdist is unpacked where no ``../shared/spec`` exists, installed (with its ``test``
   extra) into this environment, and its fast test suite is run from the unpacked tree with
   ``PI_ASK_SPEC_DIR`` unset (the tests must find the spec the sdist carries) and
   ``PI_ASK_WHEEL`` naming the wheel: ``tests/test_release.py`` lists what it must hold, exactly.
4. The installed command answers ``pi-ask --version`` and ``pi-ask docs relay``.

Run: ``tox -e sdist``, or ``python scripts/check-sdist.py`` in a venv that has ``build`` and
``twine``. Exit status 0 when everything held, 1 otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The fast suite, as tox.ini's [testenv] runs it: no real Pi, browser, sshd or mypy cases.
FAST = [
    "--ignore=tests/integration",
    "--ignore=tests/typing",
    "--ignore=tests/browser",
    "--ignore=tests/stress",
    "--ignore=tests/remote",
    "--ignore=tests/fleet",
]


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(args), flush=True)
    subprocess.run(args, cwd=cwd, env=env, check=True, timeout=1800)


def expect(names: list[str], wanted: str, what: str) -> None:
    if not any(name.endswith(wanted) for name in names):
        raise SystemExit(f"check-sdist: the {what} lacks {wanted}")


def clean_clone(into: Path) -> Path:
    """The project's files as a fresh clone has them (the working tree's versions), in
    ``into/pi-ask-sdk``; outside a git checkout (an unpacked sdist), all of it."""
    clone = into / "pi-ask-sdk"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".tox", ".venv*", "node*"))
        return clone
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():  # (a file deleted in the tree is not in a clone either)
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    return clone


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pi-ask-sdist-") as tmp:
        work = Path(tmp)
        dist = work / "dist"
        clone = clean_clone(work)
        assert not (clone.parent / "shared").exists()
        run(sys.executable, "-m", "build", "--outdir", str(dist), str(clone), cwd=clone)
        [sdist] = dist.glob("*.tar.gz")
        [wheel] = dist.glob("*.whl")
        run(sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel), cwd=work)
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            [meta] = [name for name in names if name.endswith(".dist-info/METADATA")]
            description = archive.read(meta).decode().split("\n\n", 1)[1]
        if "pip install pi-ask-sdk" not in description.split("```", 2)[1]:
            raise SystemExit("check-sdist: the long description does not start with pip install")
        with tarfile.open(sdist) as archive:
            members = archive.getnames()
            expect(members, "/LICENSE", "sdist")
            expect(members, "/CHANGELOG.md", "sdist")
            expect(members, "/spec/examples.json", "sdist")
            unpacked = work / "unpacked"
            if hasattr(tarfile, "data_filter"):  # 3.10.12+, 3.11.4+: refuse odd members
                archive.extractall(unpacked, filter="data")
            else:
                archive.extractall(unpacked)
        [tree] = unpacked.iterdir()
        assert not (tree.parent / "shared").exists()
        env = {key: value for key, value in os.environ.items() if key != "PI_ASK_SPEC_DIR"}
        env["PI_ASK_WHEEL"] = str(wheel)
        run(sys.executable, "-m", "pip", "install", "-q", f"{sdist}[test]", cwd=work)
        run(
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FAST, cwd=tree, env=env
        )
        script = Path(sys.executable).parent / "pi-ask"
        run(str(script), "--version", cwd=work, env=env)
        shown = subprocess.run(
            [str(script), "docs", "relay"], cwd=work, capture_output=True, text=True, check=True
        )
        if "# Answering a real Pi's forms from Python" not in shown.stdout:
            raise SystemExit("check-sdist: `pi-ask docs relay` did not print the relay guide")
    print("check-sdist: the sdist builds, carries what it needs and passes its tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
