"""Headless Pi (``--mode rpc``): forms open only through the relay as the host's external-UI
provider, and only while a client that answers forms is connected (spec Appendix B).

Real Pi, real relay, the stand-in host (which negotiates as the real pi-agent-ask does), real
bridges; a killed bridge is a real process killed with SIGKILL.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from pi_ask_sdk import Cancel, SubmitAccepted
from pi_ask_sdk.testing.realpi import PiRecord
from pi_ask_sdk.transports.relay import RelayTransport, relay_extension_path
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    next_flow,
    running_pi,
    single_question,
)
from tests.integration.test_standin import RawRelay

pytestmark = pytest.mark.pi

ROOT = Path(__file__).resolve().parents[2]
OTHER_PROVIDER = Path(__file__).parent / "extensions" / "other-provider.ts"
GRACE_MS = 1000
FALLBACK_WITHIN = 2.0
"""The issue's bound for the fallback without an answering bridge (it comes at once)."""


@pytest.fixture(scope="module")
def headless_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PiProcess]:
    """One headless Pi for the module, with a short grace period for a bridge that left."""
    with pi_with_grace(pi_installation, shared_tmp, tmp_path_factory.mktemp("pi"), GRACE_MS) as pi:
        yield pi


@contextmanager
def pi_with_grace(
    env: PiEnv, shared_tmp: Path, workdir: Path, grace_ms: int
) -> Iterator[PiProcess]:
    """A headless Pi of the test's own whose relay keeps a form ``grace_ms`` for a bridge."""
    with running_pi(
        env, workdir, shared_tmp=shared_tmp, extra_env={"PI_ASK_RELAY_GRACE_MS": str(grace_ms)}
    ) as pi:
        yield pi


def call(pi: PiProcess, call_id: str, *, background: bool = False) -> int:
    """The scripted model calls ask_user; returns the record mark before it."""
    pi.wait_idle()  # (Pi takes a prompt only when its agent is idle)
    since = pi.mark()
    params = {**single_question(), "background": True} if background else single_question()
    pi.prompt(f"CALL ask_user#{call_id} {json.dumps(params)}")
    return since


def tool_end(pi: PiProcess, call_id: str, since: int, timeout: float = TIMEOUT) -> PiRecord:
    return pi.wait_record(
        lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == call_id,
        since=since,
        timeout=timeout,
    )


def assistant_text(record: PiRecord) -> str | None:
    """The text of an assistant's ``message_end`` record (what the model said), else None."""
    if record.get("type") != "message_end":
        return None
    message = cast("dict[str, Any]", record).get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    if not content or content[0].get("type") != "text":
        return None
    return str(content[0]["text"])


def model_reply(pi: PiProcess, since: int) -> str:
    """The scripted model's next reply text (it echoes the tool result it received)."""
    text = assistant_text(pi.wait_record(lambda r: assistant_text(r) is not None, since=since))
    assert text is not None
    return text


def completed_flows(pi: PiProcess) -> list[str]:
    assert pi.standin is not None
    return [event.flow_id for event in pi.standin.server.completed]


def assert_fallback(pi: PiProcess, call_id: str, since: int, started: float) -> None:
    record = tool_end(pi, call_id, since)
    assert time.monotonic() - started < FALLBACK_WITHIN
    assert record.get("isError") is False
    details = record["result"]["details"]
    assert (details["cancelled"], details["answers"]) == (True, {})
    assert f"tool:{call_id}" not in completed_flows(pi)  # no flow: no events at all
    assert f"tool:{call_id}" not in pi.open_flow_ids()


@pytest.mark.asyncio
async def test_an_answering_bridge_answers_and_the_model_receives_the_answer(
    headless_pi: PiProcess,
) -> None:
    pi = headless_pi
    async with pi.client() as client:
        flows = client.flows()
        since = call(pi, "answered")
        flow = await next_flow(flows, "tool:answered")
        outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
    record = tool_end(pi, "answered", since)
    assert record.get("isError") is False
    assert record["result"]["details"]["answers"]["q"]["values"] == ["b"]
    reply = model_reply(pi, since)
    assert reply.startswith("TOOL RESULT ask_user: ")
    assert json.loads(reply.removeprefix("TOOL RESULT ask_user: "))["answers"]["q"]["values"] == [
        "b"
    ]


def test_without_a_bridge_the_model_gets_the_fallback_at_once(headless_pi: PiProcess) -> None:
    started = time.monotonic()
    since = call(headless_pi, "nobody")
    assert_fallback(headless_pi, "nobody", since, started)
    reply = model_reply(headless_pi, since)
    assert json.loads(reply.removeprefix("TOOL RESULT ask_user: "))["cancelled"] is True


@pytest.mark.asyncio
async def test_a_background_call_gets_the_fallback_even_with_a_bridge(
    headless_pi: PiProcess,
) -> None:
    # The real host offers no external UI for a background call outside the TUI (spec §3.1).
    pi = headless_pi
    async with pi.client() as client:
        started = time.monotonic()
        since = call(pi, "in-background", background=True)
        assert_fallback(pi, "in-background", since, started)
        assert list(client.open_flows) == []


@pytest.mark.asyncio
async def test_observers_alone_get_the_fallback_and_see_no_form(headless_pi: PiProcess) -> None:
    pi = headless_pi
    watcher = RelayTransport(pi.socket_path, role="observer", foreign_results=True)
    seen: list[str] = []

    class Listener:
        def message(self, channel: str, data: object, *, replay: bool = False) -> None:
            seen.append(channel)

        def ended(self, reason: str) -> None:
            pass

    await watcher.open(Listener())
    raw = RawRelay(pi.socket_path, role="observer")
    try:
        assert watcher.hello is not None
        assert watcher.hello.client_hello == 1
        started = time.monotonic()
        since = call(pi, "watched")
        assert_fallback(pi, "watched", since, started)
    finally:
        raw.close()
        await watcher.close()
    assert seen == []


@pytest.mark.asyncio
async def test_a_killed_bridge_ends_the_call_as_a_tool_error_and_the_form_is_not_replayed(
    headless_pi: PiProcess,
) -> None:
    pi = headless_pi
    bridge = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.bridge_process", str(pi.socket_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert bridge.stdout is not None
        assert bridge.stdout.readline().strip() == "ready"
        since = call(pi, "killed")
        assert bridge.stdout.readline().strip() == "flow tool:killed"
        bridge.kill()
        killed = time.monotonic()
        bridge.wait(TIMEOUT)
        record = tool_end(pi, "killed", since, timeout=GRACE_MS / 1000 + 2)
        assert time.monotonic() - killed < GRACE_MS / 1000 + 2
        assert time.monotonic() - killed >= GRACE_MS / 1000 * 0.9  # the grace was given
    finally:
        if bridge.poll() is None:
            bridge.kill()
            bridge.wait(TIMEOUT)
    assert record.get("isError") is True
    assert "no pi-ask client that answers forms" in json.dumps(record["result"])
    assert "tool:killed" not in completed_flows(pi)  # disposed, not completed
    assert "tool:killed" not in pi.open_flow_ids()
    async with pi.client() as client:
        assert list(client.open_flows) == []


@pytest.mark.asyncio
async def test_a_bridge_that_returns_within_the_grace_period_keeps_the_form(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with pi_with_grace(pi_installation, shared_tmp, tmp_path / "pi", 60_000) as pi:
        first = RawRelay(pi.socket_path)
        since = call(pi, "back")
        assert first.event()[0] == "pi-agent-ask:started"
        first.close()  # the bridge restarts (or its SSH forward is re-established)
        async with pi.client() as client:
            [flow] = client.open_flows.values()  # replayed
            assert flow.flow_id == "tool:back"
            outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
        record = tool_end(pi, "back", since)
        assert record["result"]["details"]["answers"]["q"]["values"] == ["a"]


@pytest.mark.asyncio
async def test_a_zero_grace_period_fails_the_call_when_the_bridge_leaves(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with pi_with_grace(pi_installation, shared_tmp, tmp_path / "pi", 0) as pi:
        bridge = RawRelay(pi.socket_path)
        since = call(pi, "gone")
        assert bridge.event()[0] == "pi-agent-ask:started"
        bridge.close()
        record = tool_end(pi, "gone", since, timeout=2.0)
        assert record.get("isError") is True
        assert "tool:gone" not in completed_flows(pi)


@pytest.mark.asyncio
async def test_a_bridge_that_turns_observer_counts_as_gone(headless_pi: PiProcess) -> None:
    pi = headless_pi
    bridge = RawRelay(pi.socket_path)
    try:
        since = call(pi, "turned")
        assert bridge.event()[0] == "pi-agent-ask:started"
        bridge.send_line(b'{"type":"hello","version":1,"role":"observer"}')
        assert bridge.read()["type"] == "welcome"
        record = tool_end(pi, "turned", since, timeout=GRACE_MS / 1000 + 2)
        assert record.get("isError") is True
    finally:
        bridge.close()


@pytest.mark.asyncio
async def test_a_bridge_cancel_ends_the_agents_turn(headless_pi: PiProcess) -> None:
    pi = headless_pi
    async with pi.client() as client:
        flows = client.flows()
        since = call(pi, "cancelled")
        flow = await next_flow(flows, "tool:cancelled")
        outcome = await client.respond(flow, Cancel.of(flow), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
    end = pi.wait_record(lambda r: r.get("type") == "agent_end", since=since)
    # the turn was aborted: the model was not asked again after the tool call
    replies = [r for r in pi.records[since : pi.records.index(end)] if assistant_text(r)]
    assert replies == []
    assert "tool:cancelled" in completed_flows(pi)


def test_the_relay_forwards_only_the_protocol_keys_of_a_submit_result(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(
        pi_installation,
        tmp_path / "pi",
        shared_tmp=shared_tmp,
        extra_args=["-e", str(OTHER_PROVIDER)],
    ) as pi:
        watcher = RawRelay(pi.socket_path, role="observer")
        try:
            leaked = {
                "version": 1, "requestId": "r", "flowId": "f", "ok": False,
                "error": "invalid_answer", "message": "m", "state": {"questions": []},
            }  # fmt: skip
            pi.prompt(f"/other-emit-result {json.dumps(leaked)}")
            channel, data = watcher.event()
            assert channel == "pi-agent-ask:submit-result"
            assert list(data) == ["version", "requestId", "flowId", "ok", "error", "message"]
        finally:
            watcher.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("relay_first", [True, False], ids=["relay-first", "other-first"])
async def test_with_two_providers_the_first_wins_and_the_relay_keeps_relaying(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path, relay_first: bool
) -> None:
    relay = ["-e", str(relay_extension_path())]
    other = ["-e", str(OTHER_PROVIDER)]
    with running_pi(
        pi_installation,
        tmp_path / "pi",
        shared_tmp=shared_tmp,
        relay=False,  # loaded here, in the order under test
        extra_args=[*relay, *other] if relay_first else [*other, *relay],
    ) as pi:
        pi.wait_socket()
        async with pi.client() as client:
            flows = client.flows()
            for n in range(2):
                since = call(pi, f"two-{n}")
                flow = await next_flow(flows, f"tool:two-{n}")
                outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
                assert isinstance(outcome, SubmitAccepted)
                record = tool_end(pi, f"two-{n}", since)
                assert record["result"]["details"]["answers"]["q"]["values"] == ["a"]
    # (read once Pi has stopped: then all of its stderr has been read)
    other_said = [line for line in pi.stderr_lines if line.startswith("[other-provider]")]
    refused = [line for line in pi.stderr_lines if "refused the relay" in line]
    if relay_first:
        assert other_said == ["[other-provider] connected: false"] * 2
        assert refused == []
    else:
        assert other_said == ["[other-provider] connected: true"] * 2
        assert len(refused) == 1  # logged once


@pytest.mark.asyncio
async def test_with_the_relay_loaded_twice_the_live_copy_provides(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    # e.g. installed as a Pi package and given with -e too: the copy that listens last serves
    copy = tmp_path / "pi-ask-relay-copy.ts"
    copy.write_text(relay_extension_path().read_text())
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, extra_args=["-e", str(copy)]
    ) as pi:
        async with pi.client() as client:
            flows = client.flows()
            since = call(pi, "twice")
            flow = await next_flow(flows, "tool:twice")
            outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
        record = tool_end(pi, "twice", since)
        assert record["result"]["details"]["answers"]["q"]["values"] == ["b"]
    assert not [line for line in pi.stderr_lines if "refused the relay" in line]


def test_pi_quits_while_a_provided_form_waits(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp) as pi:
        bridge = RawRelay(pi.socket_path)
        try:
            call(pi, "quit")
            assert bridge.event()[0] == "pi-agent-ask:started"
            started = time.monotonic()
            code = pi.stop()  # closes stdin: Pi quits, the relay with it
            assert code == 0  # not killed: nothing held Pi
            assert time.monotonic() - started < 5
            assert bridge.read() == {"type": "session_end", "reason": "quit"}
        finally:
            bridge.close()
