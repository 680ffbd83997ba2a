"""From the wheel alone, outside this checkout, the steps of docs/real-pi.md.

Build the wheel, install it into a fresh venv in a temporary directory, then: ``pi-ask try``
(installs the pinned Pi from npm into a fresh cache, starts it with the relay and the stand-in
host, opens a form) answered by ``pi-ask answer`` from "another terminal"; and a copy of
``examples/real_pi_bridge`` runs its real-Pi test with that venv's pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.integration.pi_process import ROOT, PiEnv, make_private_dir

pytestmark = pytest.mark.pi

INSTALL = 600.0
"""Upper bound (s) of a pip or npm step (registries; normally a few seconds)."""


def run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = INSTALL) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv, outside the checkout, with the built wheel (and pytest) installed."""
    work = tmp_path_factory.mktemp("wheel")
    env = clean_env()
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(work / "dist"),
            str(ROOT),
        ],
        cwd=work,
        env=env,
    )
    [wheel] = (work / "dist").glob("pi_ask_sdk-*.whl")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=work, env=env)
    run([str(venv / "bin" / "pip"), "install", "-q", str(wheel), "pytest"], cwd=work, env=env)
    return venv


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that points into the checkout or its venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PI_ASK_PI_CACHE") and not k.startswith("TOX")
    }
    env.update(extra)
    return env


def test_pi_ask_try_answered_by_pi_ask_answer(
    wheel_venv: Path, pi_installation: PiEnv, tmp_path: Path
) -> None:
    bin_dir = wheel_venv / "bin"
    shipped = run([str(bin_dir / "pi-ask"), "standin-path"], cwd=tmp_path, env=clean_env())
    assert Path(shipped.strip()).is_relative_to(wheel_venv)
    assert not Path(shipped.strip()).is_relative_to(ROOT)
    env = clean_env(
        PI_ASK_PI_CACHE=str(tmp_path / "cache"),  # a fresh cache: `try` installs Pi itself
        PI_ASK_RELAY_DIR=str(make_private_dir(tmp_path / "relays")),
    )
    flavour = pi_installation.flavour
    trying = subprocess.Popen(
        [str(bin_dir / "pi-ask"), "try", "--flavour", flavour],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Bound the whole run: a hung `try` is killed, and the assertions below then fail.
    timer = threading.Timer(INSTALL, trying.kill)
    timer.start()
    try:
        assert trying.stdout is not None
        lines: list[str] = []
        for line in trying.stdout:
            lines.append(line)
            if line.strip().startswith("pi-ask answer --pid"):
                break
        command = lines[-1].split()
        assert command[:3] == ["pi-ask", "answer", "--pid"], "".join(lines)
        # "another terminal": deploy=window, notify=oncall+status-page, migration=offline
        answered = subprocess.run(
            [str(bin_dir / "pi-ask"), "answer", "--pid", command[3], "--count", "1"],
            input="window\n\n1,3\ntell them\n2\n\ns\n",
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert answered.returncode == 0, answered.stdout + answered.stderr
        assert "accepted" in answered.stdout
        rest = trying.stdout.read()
        assert trying.wait(30) == 0, "".join(lines) + rest
    finally:
        timer.cancel()
        if trying.poll() is None:
            trying.kill()
            trying.wait()
    result = json.loads(rest[rest.index("{") :])
    assert result["cancelled"] is False
    assert result["answers"]["deploy"]["values"] == ["window"]
    assert result["answers"]["notify"] == {
        "values": ["oncall", "status-page"],
        "labels": ["On-call engineer", "Customer status page"],
        "indices": [1, 3],
        "note": "tell them",
    }
    assert result["answers"]["migration"]["values"] == ["offline"]
    assert (tmp_path / "cache").is_dir()


def test_a_bridge_project_runs_its_real_pi_test(
    wheel_venv: Path, pi_installation: PiEnv, tmp_path: Path
) -> None:
    project = tmp_path / "my-bridge"
    shutil.copytree(
        ROOT / "examples" / "real_pi_bridge", project, ignore=shutil.ignore_patterns("__pycache__")
    )
    env = clean_env(
        PI_ASK_PI_CACHE=str(ROOT / "tests" / "integration"),  # the Pi installed for this suite
        PI_ASK_PI_FLAVOUR=pi_installation.flavour,
    )
    out = run([str(wheel_venv / "bin" / "pytest"), "-q", "--pi-ask-real-pi"], cwd=project, env=env)
    assert "1 passed" in out
