"""Hostile and unlucky relay input against RelayTransport (issue 8), on a Python relay.

Lone surrogates in Pi's JSON, lines after ``session_end`` on a socket left open, JSON nested past
Python's recursion limit, verdicts on another connection's submit, a replay cut short, socket
paths too long for a Unix socket, stale sockets, and repeated ``completed`` events.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import msgspec
import pytest

from pi_ask_core import COMPLETED, STARTED, SUBMIT_RESULT, CancelResponse, SubmitEvent
from pi_ask_sdk import Answer, AnswerBuilder, BridgeClient, ConnectionLost, FlowView
from pi_ask_sdk.transports.relay import (
    NoRelayFound,
    RelayError,
    RelayPathTooLong,
    RelayTransport,
    replace_lone_surrogates,
)

from .fake_relay import FakeRelay
from .test_relay_handshake import HELLO, WAIT, Recorder, fake_relay, line

FORM = {
    "title": "Deploy?",
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        }
    ],
}
T = 5.0


def started_line(flow_id: str, title: str, *, replay: bool = False) -> bytes:
    """A started event as Pi's relay writes it; ``title`` is inserted as raw JSON text."""
    data = (
        f'{{"version":1,"flowId":"{flow_id}","source":"tool","title":"{title}","createdAt":1,'
        '"questions":[{"id":"q","label":"Q","prompt":"P","type":"single","required":false,'
        '"options":[{"value":"a","label":"A"}]}]}'
    )
    flag = "true" if replay else "false"
    return (
        f'{{"type":"event","channel":"pi-agent-ask:started","data":{data},"replay":{flag}}}\n'
    ).encode()


def answer(flow: FlowView, value: str = "yes") -> Answer:
    deploy = flow.question("deploy")
    return AnswerBuilder(flow).select(deploy, deploy.value(value)).build()


def test_lone_surrogate_escapes_become_replacement_characters() -> None:
    assert replace_lone_surrogates(rb'"\ud83d x"') == rb'"\ufffd x"'
    assert replace_lone_surrogates(rb'"\ude00\ud83d"') == rb'"\ufffd\ufffd"'
    # a pair is a character, and an escaped backslash is not an escape
    assert replace_lone_surrogates(rb'"\ud83d\ude00"') == rb'"\ud83d\ude00"'
    assert replace_lone_surrogates(rb'"\\ud83d"') == rb'"\\ud83d"'
    assert replace_lone_surrogates(rb'"\\\ud83d"') == rb'"\\\ufffd"'


@pytest.mark.asyncio
async def test_a_form_with_a_lone_surrogate_reaches_the_client(relay: FakeRelay) -> None:
    async with BridgeClient(RelayTransport(relay.path)) as client:
        flows = client.flows()
        await relay.wait_connected()
        relay.send_line(started_line("f1", r"Ship \ud83d now \ud83d\ude00"))
        flow = await flows.next(timeout=T)
        assert str(flow.title) == "Ship \ufffd now \U0001f600"


@pytest.mark.asyncio
async def test_lines_after_session_end_are_ignored_and_the_client_reconnects_at_once(
    relay: FakeRelay,
) -> None:
    transport = RelayTransport(relay.path)
    async with BridgeClient(transport) as client:
        events = client.events()
        await relay.wait_connected()
        # The relay says goodbye but leaves the socket open and keeps writing.
        relay.send_line(b'{"type":"session_end","reason":"new"}\n')
        relay.send_line(started_line("ghost", "after the end"))
        ended = await events.next(timeout=T)
        assert ended.kind == "session_ended"
        relay.open_form(FORM, "next")  # live or replayed: only a new connection carries it
        started = await events.next(timeout=T)
        assert started.kind == "started"
        assert started.flow.flow_id == "tool:next"
        assert "ghost" not in client.open_flows
        assert transport.connections == 2


@pytest.mark.asyncio
async def test_json_nested_too_deeply_is_skipped_and_the_connection_stays(
    relay: FakeRelay,
) -> None:
    transport = RelayTransport(relay.path)
    async with BridgeClient(transport) as client:
        flows = client.flows()
        await relay.wait_connected()
        depth = 100_000
        relay.send_line(b"[" * depth + b"]" * depth + b"\n")
        deep_data = b'{"a":' * depth + b"1" + b"}" * depth
        relay.send_line(
            b'{"type":"event","channel":"pi-agent-ask:started","data":' + deep_data + b"}\n"
        )
        relay.open_form(FORM, "after-deep")
        flow = await flows.next(timeout=T)
        assert flow.flow_id == "tool:after-deep"
        assert transport.is_connected
        assert transport.connections == 1


@pytest.mark.asyncio
async def test_a_verdict_on_another_connections_submit_resolves_no_waiter(
    relay: FakeRelay,
) -> None:
    async with BridgeClient(RelayTransport(relay.path)) as client:
        flows = client.flows()
        relay.open_form(FORM, "shared")
        flow = await flows.next(timeout=T)
        relay.host.close()  # the relay's host stays quiet: verdicts are written by hand
        ticket = await client.submit(flow, answer(flow), request_id="same")

        def verdict(ok: bool, own: bool) -> bytes:
            data: dict[str, object] = {"version": 1, "requestId": "same", "flowId": flow.flow_id}
            if ok:
                data["ok"] = True
            else:
                data.update(ok=False, error="invalid_answer", message="not this one")
            line = {"type": "event", "channel": SUBMIT_RESULT, "data": data, "own": own}
            return json.dumps(line).encode() + b"\n"

        relay.send_line(verdict(True, own=False))  # another bridge's submit, same ids
        relay.send_line(verdict(False, own=True))  # ours
        outcome = await client.await_result(ticket, timeout=T)
        assert outcome.kind == "rejected"


@pytest.mark.asyncio
async def test_a_watcher_can_ask_for_every_verdict(relay: FakeRelay) -> None:
    seen: list[str] = []
    marker = asyncio.Event()

    class Listener:
        def message(self, channel: str, data: object, *, replay: bool = False) -> None:
            seen.append(channel)
            if channel == STARTED:
                marker.set()

        def ended(self, reason: str) -> None:
            pass

    transport = RelayTransport(relay.path, foreign_results=True)
    await transport.open(Listener())
    try:
        await relay.wait_connected()
        line = {
            "type": "event",
            "channel": SUBMIT_RESULT,
            "data": {"version": 1, "requestId": "r", "flowId": "f", "ok": True},
            "own": False,
        }
        relay.send_line(json.dumps(line).encode() + b"\n")
        relay.open_form(FORM, "marker")  # arrives after the verdict
        await asyncio.wait_for(marker.wait(), T)
        assert seen == [SUBMIT_RESULT, STARTED]
    finally:
        await transport.close()


@pytest.mark.asyncio
async def test_a_replay_cut_short_is_retried_while_pi_lives(relay: FakeRelay) -> None:
    transport = RelayTransport(relay.path)
    async with BridgeClient(transport) as client:
        relay.open_form(FORM, "one")
        relay.open_form(FORM, "two")
        events = client.events()  # starts with the two open forms
        relay.cut_replays = 2  # the next two connections end after their first replay
        await relay.end_session("new")  # the client reconnects
        relay.open_form(FORM, "three")
        relay.open_form(FORM, "four")
        first = [await events.next(timeout=T) for _ in range(3)]
        assert [e.kind for e in first] == ["started", "started", "session_ended"]
        seen = [await events.next(timeout=T) for _ in range(2)]
        assert [e.flow.flow_id for e in seen if e.kind == "started"] == [
            "tool:three",
            "tool:four",
        ]
        assert transport.is_connected


@pytest.mark.asyncio
async def test_a_repeated_completed_event_reaches_events_once(relay: FakeRelay) -> None:
    completed: list[object] = []
    relay.bus.on(COMPLETED, completed.append)
    async with BridgeClient(RelayTransport(relay.path)) as client:
        flows, events = client.flows(), client.events()
        relay.open_form(FORM, "twice")
        flow = await flows.next(timeout=T)
        outcome = await client.respond(flow, answer(flow), timeout=T)
        assert outcome.kind == "accepted"
        line = {
            "type": "event",
            "channel": COMPLETED,
            "data": msgspec.to_builtins(completed[0]),
            "replay": False,
        }
        relay.send_line(json.dumps(line).encode() + b"\n")  # the same completion again
        relay.open_form(FORM, "marker")
        kinds = []
        while True:
            event = await events.next(timeout=T)
            kinds.append(event.kind)
            if event.kind == "started" and event.flow.flow_id == "tool:marker":
                break
        assert kinds == ["started", "completed", "started"]


@pytest.mark.asyncio
async def test_a_socket_path_too_long_is_a_typed_error(tmp_path: Path) -> None:
    directory = tmp_path / ("d" * 100)
    directory.mkdir(mode=0o700)
    with pytest.raises(RelayPathTooLong) as raised:
        await BridgeClient(RelayTransport(directory / "pi-1.sock")).open()
    assert "PI_ASK_RELAY_DIR" in str(raised.value)
    assert isinstance(raised.value, RelayError)


@pytest.mark.asyncio
async def test_a_stale_socket_is_no_relay_found(tmp_path: Path) -> None:
    directory = tmp_path / "relays"
    directory.mkdir(mode=0o700)
    path = directory / f"pi-{os.getpid()}.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # bound, never listening: connect() is refused, as after a crash
    stale.close()
    path.chmod(0o600)
    with pytest.raises(NoRelayFound) as raised:
        await BridgeClient(RelayTransport(path)).open()
    assert "refuses connections" in str(raised.value)


@pytest.mark.asyncio
async def test_a_submit_with_a_lone_surrogate_is_sent_and_recorded_with_a_replacement(
    relay: FakeRelay,
) -> None:
    completed: list[object] = []
    relay.bus.on(COMPLETED, completed.append)
    async with BridgeClient(RelayTransport(relay.path)) as client:
        flows = client.flows()
        relay.open_form(FORM, "odd-answer")
        flow = await flows.next(timeout=T)
        deploy = flow.question("deploy")
        text = b"caf\xe9".decode("utf-8", "surrogateescape")  # '\udce9': not valid Unicode
        answer = AnswerBuilder(flow).custom_text(deploy, text).build()
        outcome = await client.respond(flow, answer, timeout=T)
        assert outcome.kind == "accepted"
    assert b"\\udce9" in json.dumps(relay.received[0]).encode()
    result = msgspec.to_builtins(completed[0])["result"]
    assert result["answers"]["deploy"]["customText"] == "caf\ufffd"


@pytest.mark.asyncio
async def test_a_relay_that_stops_reading_is_dropped_and_a_submit_says_what_the_events_say(
    tmp_path: Path,
) -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line({**HELLO, "socket": str(path)}))
        await asyncio.wait_for(release.wait(), 10 * WAIT)  # reads nothing (a stuck Pi)

    async with fake_relay(tmp_path, handler) as path:
        recorder = Recorder()
        transport = RelayTransport(path, hello_timeout=0.5)
        await transport.open(recorder)
        try:
            big = SubmitEvent(request_id="r" * 4_000_000, flow_id="f1", response=CancelResponse())
            await transport.send(big)  # more than the socket buffers hold: writing pauses
            with pytest.raises(ConnectionLost) as lost:
                await transport.send(big)
            # dropped, as the relay drops a client that stalls, and reconnecting
            assert lost.value.reason == "session_ended"
            assert await recorder.next() == ("ended", "session_ended", False)
            assert not transport.is_connected
        finally:
            release.set()
            await transport.close()
