"""scripts/test-all.sh with ``CI=true`` fails unless every supported Python is there to run.

Only the refusing paths are run here (they stop before tox is installed or started).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test-all.sh"


def fake_pyenv(root: Path, minors: list[int]) -> Path:
    """A PYENV_ROOT holding stand-in interpreters ``python3.<minor>`` (never run)."""
    for minor in minors:
        bin_dir = root / "versions" / f"3.{minor}.0" / "bin"
        bin_dir.mkdir(parents=True)
        exe = bin_dir / f"python3.{minor}"
        exe.write_text("#!/bin/sh\nexit 99\n")
        exe.chmod(0o755)
    return root


def run(pyenv_root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true", "PYENV_ROOT": str(pyenv_root)}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("present", [[], [11], [10, 11, 12], [11, 12, 13]])
def test_ci_fails_when_an_interpreter_is_missing(tmp_path: Path, present: list[int]) -> None:
    done = run(fake_pyenv(tmp_path / "pyenv", present))
    assert done.returncode == 1
    missing = [f"3.{m}" for m in (10, 11, 12, 13) if m not in present]
    assert f"missing under {tmp_path / 'pyenv' / 'versions'}: {' '.join(missing)}" in done.stderr
    assert "tox envs:" not in done.stdout


def test_ci_refuses_to_narrow_the_matrix(tmp_path: Path) -> None:
    done = run(fake_pyenv(tmp_path / "pyenv", [10, 11, 12, 13]), "-e", "lint")
    assert done.returncode == 1
    assert "CI=true runs the whole matrix" in done.stderr
    assert "tox envs:" not in done.stdout


def test_ci_with_every_interpreter_runs_the_whole_matrix_without_skipping(tmp_path: Path) -> None:
    """The passing path, on a copy of the script whose tox only reports how it was called."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "test-all.sh").write_text(SCRIPT.read_text())
    tox = root / ".venv-tools" / "bin" / "tox"
    tox.parent.mkdir(parents=True)
    tox.write_text('#!/bin/sh\necho "tox $* skip=$PI_ASK_SKIP_MISSING_INTERPRETERS"\n')
    tox.chmod(0o755)
    pyenv = fake_pyenv(tmp_path / "pyenv", [10, 11, 12, 13])
    env = {**os.environ, "CI": "true", "PYENV_ROOT": str(pyenv)}
    done = subprocess.run(
        ["bash", str(root / "scripts" / "test-all.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    matrix = (
        "py313,py312,py311,py310,typing,lint,sdist,fleet,fleet-production,pi,pi-legacy,stress,"
        "ssh,web,bench-smoke,docs"
    )
    # The same envs as tox.ini's env_list (what `tox` alone runs), the Pythons first.
    [env_list] = re.findall(r"^env_list = (.*)$", (ROOT / "tox.ini").read_text(), flags=re.M)
    assert sorted(matrix.split(",")) == sorted(env.strip() for env in env_list.split(","))
    assert done.stdout.splitlines() == [
        f"tox envs: {matrix}",
        f"tox run -e {matrix} skip=false",
    ]
