"""pi-ask watch, answer and doctor against a Python relay on a real socket."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.cli.console import answer_forms
from pi_ask_sdk.cli.watch import watch
from pi_ask_sdk.transports.relay import RelayTransport

from .fake_relay import FakeRelay

FORM = {
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [
                {"value": "yes", "label": "Yes", "recommended": True},
                {"value": "no", "label": "No"},
            ],
        },
        {
            "id": "notify",
            "prompt": "Notify?",
            "type": "multi",
            "options": [
                {"value": "oncall", "label": "On-call"},
                {"value": "team", "label": "Team"},
            ],
        },
    ]
}
T = 10.0


@pytest.mark.asyncio
async def test_watch_prints_live_events_as_json(relay: FakeRelay) -> None:
    lines: list[str] = []
    task = asyncio.create_task(
        watch(lines.append, as_json=True, directory=relay.directory, poll=0.05, duration=2.0)
    )
    await relay.wait_connected(timeout=T)
    handle = relay.open_form(FORM, "call-w")
    handle.cancel()
    assert await asyncio.wait_for(task, T) == 0
    events = [json.loads(line) for line in lines]
    assert [(e["pid"], e["channel"]) for e in events] == [
        (os.getpid(), "pi-agent-ask:started"),
        (os.getpid(), "pi-agent-ask:completed"),
    ]
    assert events[1]["data"]["result"]["cancelled"] is True
    assert relay.received == []  # watching sends nothing


@pytest.mark.asyncio
async def test_watch_prints_forms_readably(relay: FakeRelay) -> None:
    lines: list[str] = []
    relay.open_form(FORM, "call-r")  # already open: replayed
    await watch(lines.append, directory=relay.directory, duration=0.3, poll=0.05)
    text = "\n".join(lines)
    assert f"[pi {os.getpid()}] started tool:call-r (already open)" in text
    assert "1) yes  Yes (recommended)" in text


@pytest.mark.asyncio
async def test_answer_sends_the_persons_values(relay: FakeRelay) -> None:
    typed = iter(["No", "2", "", "1,2", "", "s"])
    shown: list[str] = []
    async with BridgeClient(RelayTransport(relay.path)) as client:
        handle = relay.open_form(FORM, "call-a")
        answered = await asyncio.wait_for(
            answer_forms(client, lambda _: next(typed), shown.append, limit=1), T
        )
    assert answered == 1
    assert handle.result is not None
    assert {q: a.values for q, a in handle.result.answers.items()} == {
        "deploy": ["no"],
        "notify": ["oncall", "team"],
    }
    assert any('"No" is a label' in line for line in shown)
    assert any("accepted" in line for line in shown)


async def run_doctor(directory: Path) -> tuple[int | None, str, str]:
    """``pi-ask doctor`` in a subprocess with the relay directory pointed at ``directory``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pi_ask_sdk.cli",
        "doctor",
        env={**os.environ, "PI_ASK_RELAY_DIR": str(directory)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.asyncio
async def test_doctor_reports_the_relay_and_its_pi(relay: FakeRelay) -> None:
    _, text, err = await run_doctor(relay.directory)
    assert f"relay pi-{os.getpid()}.sock: Pi fake (pid {os.getpid()}) in /fake" in text, err
    assert "relay directory" in text
    # a relay that does not ping: its answerers count while connected, however silent
    assert "no liveness pings (an answering client counts while it is connected)" in text


@pytest.mark.asyncio
async def test_doctor_says_what_is_wrong_with_the_directory(relay: FakeRelay) -> None:
    os.chmod(relay.directory, 0o755)
    status, text, _ = await run_doctor(relay.directory)
    assert status == 1
    assert "[fail] relay directory" in text
    assert "chmod 700" in text
