"""``pi-ask try`` on a real Pi, as a new user meets it (issue 22): Ctrl-C, a killed Pi, odd text;
and the relay's advice for a shared relay directory."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pi_ask_sdk import AnswerBuilder, BridgeClient, SubmitAccepted
from pi_ask_sdk.transports.relay import RelayTransport
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    flavour_from_env,
    make_private_dir,
)
from tests.interrupts import default_sigint, is_gone

pytestmark = pytest.mark.pi

READY = "Ctrl-C stops."


class Try:
    """``python -m pi_ask_sdk.cli try`` in a session of its own (as a terminal's foreground job:
    a Ctrl-C there is a SIGINT to its whole process group)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []

    def read_until(self, text: str) -> str:
        assert self.proc.stdout is not None
        # Bounded: a hung `try` is killed by the watchdog below, which ends this loop.
        for line in self.proc.stdout:
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never came; output:\n{''.join(self.lines)}")

    def value(self, pattern: str) -> str:
        match = re.search(pattern, "".join(self.lines))
        assert match is not None, self.lines
        return match.group(1)

    def finish(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, "".join(self.lines) + out, err


@contextmanager
def pi_ask_try(tmp_path: Path, *args: str) -> Iterator[Try]:
    relays = make_private_dir(tmp_path / "relays")
    env = {**os.environ, "PI_ASK_RELAY_DIR": str(relays)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_ask_sdk.cli", "try", "--flavour", flavour_from_env(), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,  # Ctrl-C works in it even when this suite ignores SIGINT
    )
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    run = Try(proc)
    try:
        yield run
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
        # Pi runs in a session of its own: a `try` killed above leaves it to us.
        for pid in re.findall(r"runs headless \(pid (\d+)\)", "".join(run.lines)):
            if not is_gone(int(pid)):
                os.killpg(int(pid), signal.SIGKILL)


def test_one_ctrl_c_stops_try_and_leaves_no_socket(pi_installation: PiEnv, tmp_path: Path) -> None:
    with pi_ask_try(tmp_path) as run:
        run.read_until(READY)
        socket_path = Path(run.value(r"relay socket: (\S+)"))
        pi_pid = int(run.value(r"\(pid (\d+)\)"))
        assert socket_path.exists()
        os.killpg(run.proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        status, _, err = run.finish()
    assert status == 130, err
    assert "Traceback" not in err
    assert not socket_path.exists()  # Pi shut down cleanly: its relay removed the socket
    assert not os.path.exists(f"/proc/{pi_pid}")


def test_try_exits_3_when_pi_is_killed(pi_installation: PiEnv, tmp_path: Path) -> None:
    with pi_ask_try(tmp_path) as run:
        run.read_until(READY)
        os.kill(int(run.value(r"\(pid (\d+)\)")), signal.SIGKILL)
        status, _, err = run.finish()
    assert status == 3, err
    assert err.startswith("pi-ask try: Pi exited")
    assert "Traceback" not in err


@pytest.mark.asyncio
async def test_try_shows_a_bidi_override_and_controls_visibly(
    pi_installation: PiEnv, tmp_path: Path
) -> None:
    form = {
        "title": "Deploy \u202eyes\u202c?",
        "questions": [
            {
                "id": "deploy",
                "prompt": "Deploy?",
                "options": [
                    {"value": "on\u202e", "label": "On \x1b[31mred"},
                    {"value": "on", "label": "On"},
                ],
            }
        ],
    }
    path = tmp_path / "form.json"
    path.write_text(json.dumps(form), encoding="utf-8")
    with pi_ask_try(tmp_path, "--form", str(path)) as run:
        run.read_until(READY)
        socket_path = Path(run.value(r"relay socket: (\S+)"))
        async with BridgeClient(RelayTransport(socket_path)) as client:
            flow = await client.flows().next(timeout=TIMEOUT)
            deploy = flow.question("deploy")
            answer = AnswerBuilder(flow).select(deploy, deploy.value("on\u202e")).build()
            outcome = await client.respond(flow, answer, timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
        status, out, err = run.finish()
    assert status == 0, err
    assert "\u202e" not in out
    assert "\x1b" not in out
    assert '"on\\u202e"' in out  # the value sent, told apart from "on"
    result = json.loads(out[out.index("ask_user result:\n") + len("ask_user result:\n") :])
    assert result["answers"]["deploy"]["values"] == ["on\u202e"]  # still the same JSON


@pytest.mark.asyncio
async def test_a_failed_call_is_said_in_words(pi_installation: PiEnv, tmp_path: Path) -> None:
    """Issue 27: the answering bridge leaves and none comes back within the grace period: the
    call ends as a tool error, which ``try`` printed as the raw tool-result JSON."""
    with pi_ask_try(tmp_path) as run:
        run.read_until(READY)
        socket_path = Path(run.value(r"relay socket: (\S+)"))
        async with BridgeClient(RelayTransport(socket_path)) as client:
            await client.flows().next(timeout=TIMEOUT)
        # The relay's grace period (5 s by default) runs out with nobody answering. (In a
        # thread: this loop must go on running to close the bridge's socket.)
        status, out, err = await asyncio.to_thread(run.finish)
    assert status == 1, err
    [line] = [line for line in out.splitlines() if "ask_user call failed" in line]
    assert line == (
        "the ask_user call failed (Pi's agent got a tool error): no pi-ask client that answers "
        "forms has been connected to the relay for 5000 ms"
    ), out
    assert "{" not in out.split("ask_user call failed", 1)[1]  # no raw JSON


def test_relay_in_a_shared_directory_advises_a_private_one(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # what /tmp is
    pi = PiProcess(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=shared)
    with pi:
        assert pi.request({"type": "get_state"})["success"] is True  # Pi runs without a relay
        pi.stop()
    [line] = [line for line in pi.stderr_lines if "relay disabled" in line]
    assert "shared directory" in line
    assert "PI_ASK_RELAY_DIR" in line
    assert "chmod 700" not in line
