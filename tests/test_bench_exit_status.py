"""A missed target makes a benchmark exit 1 (what fails ``tox -e bench``), naming the target.

Each script runs ``--quick`` in a child process with one target made unreachable, so the check
does not depend on how fast this machine is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RUN_WITH_TARGET = """
import os, runpy, sys
script, name, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
sys.path.insert(0, os.path.dirname(script))  # as `python bench/<script>` has it
main = runpy.run_path(script, run_name="bench_under_test")["main"]
assert name in main.__globals__, name
main.__globals__[name] = value
sys.argv = [script, "--quick", *sys.argv[4:]]
sys.exit(main())
"""


def run_with_target(
    script: str, target: str, value: float, *args: str
) -> subprocess.CompletedProcess[str]:
    """``bench/<script> --quick [args]`` with the module constant ``target`` set to ``value``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-c", RUN_WITH_TARGET, str(ROOT / "bench" / script)]
    return subprocess.run(
        [*command, target, str(value), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )


def check_missed(done: subprocess.CompletedProcess[str], missed: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout
    assert done.stdout.splitlines()[-1].startswith(missed), done.stdout


@pytest.mark.parametrize(
    ("script", "target", "value", "missed"),
    [
        ("core.py", "PEER_TARGET", 0.0, "TARGETS MISSED: spec open + valid submit"),
        ("sdk.py", "ROUND_TRIP_TARGET", 0.0, "TARGETS MISSED: round trip"),
    ],
)
def test_a_missed_target_exits_1(script: str, target: str, value: float, missed: str) -> None:
    check_missed(run_with_target(script, target, value), missed)


def test_a_smoke_run_exits_0_on_a_missed_target_and_says_so() -> None:
    """``--smoke`` (what CI runs) prints the verdicts but enforces no timing."""
    done = run_with_target("sdk.py", "ROUND_TRIP_TARGET", 0.0, "--smoke")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[-2].startswith("TARGETS MISSED: round trip"), done.stdout
    assert lines[-1] == "(--smoke: targets are not enforced)", done.stdout
