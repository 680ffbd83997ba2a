"""RelayTransport against a Python relay on a real Unix socket (fast; no Pi needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_ask_sdk import AnswerBuilder, BridgeClient, ConnectionLost, SubmitLost
from pi_ask_sdk.transports.relay import (
    AmbiguousRelay,
    NoRelayFound,
    RelayTransport,
    UnsafeRelayPath,
    discover_relays,
    resolve_relay,
)

from .fake_relay import FakeRelay

FORM = {
    "title": "Deploy\u2028now?",
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        }
    ],
}
T = 5.0


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


@pytest.mark.asyncio
async def test_a_form_is_answered_end_to_end(relay: FakeRelay) -> None:
    async with BridgeClient(RelayTransport(relay.path)) as client:
        flows = client.flows()
        relay.open_form(FORM, "call-1")
        flow = await flows.next(timeout=T)
        assert str(flow.title) == "Deploy\u2028now?"
        deploy = flow.question("deploy")
        bad = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        outcome = await client.respond(flow, bad, timeout=T)
        assert outcome.kind == "accepted"
    [message] = relay.received
    assert message["type"] == "emit"
    assert message["channel"] == "pi-agent-ask:submit"
    assert message["data"]["response"] == {
        "kind": "answer",
        "mode": "submit",
        "answers": {"deploy": {"values": ["yes"]}},
    }


# Characters str.splitlines() would split on that JSON allows raw inside a string.
LINE_BREAKS = "\u2028\u2029\x85"


@pytest.mark.asyncio
async def test_raw_line_separators_inside_json_strings_do_not_split_a_line(
    relay: FakeRelay, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[bytes] = []
    write = relay.send_line

    def record(line: bytes) -> None:
        sent.append(line)
        write(line)

    monkeypatch.setattr(relay, "send_line", record)
    form = {
        "title": f"a{LINE_BREAKS}b",
        "questions": [
            {
                "id": "deploy",
                "prompt": f"Deploy{LINE_BREAKS}?",
                "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
            }
        ],
    }
    async with BridgeClient(RelayTransport(relay.path)) as client:
        flows = client.flows()
        await relay.wait_connected()
        relay.open_form(form, "call-raw")
        relay.open_form(FORM, "call-next")
        first = await flows.next(timeout=T)
        second = await flows.next(timeout=T)
    # The relay wrote the separators as raw UTF-8 bytes, one event per \n-terminated line.
    [started_raw, started_next] = sent
    for char in LINE_BREAKS:
        assert char.encode() in started_raw
    assert started_raw.count(b"\n") == 1
    assert started_raw.endswith(b"\n")
    assert b"\\u2028" not in started_raw
    assert (first.flow_id, str(first.title)) == ("tool:call-raw", f"a{LINE_BREAKS}b")
    assert str(first.question("deploy").prompt) == f"Deploy{LINE_BREAKS}?"
    assert second.flow_id == "tool:call-next"
    assert started_next.startswith(b'{"type":"event"')


@pytest.mark.asyncio
async def test_forms_open_before_connecting_are_replayed(relay: FakeRelay) -> None:
    relay.open_form(FORM, "call-early")
    async with BridgeClient(RelayTransport(relay.path)) as client:
        assert list(client.open_flows) == ["tool:call-early"]
        flow = await client.flows().next(timeout=T)
        assert flow.replay


@pytest.mark.asyncio
async def test_bad_lines_from_the_relay_are_skipped(relay: FakeRelay) -> None:
    transport = RelayTransport(relay.path, max_line_bytes=4096)
    async with BridgeClient(transport) as client:
        flows = client.flows()
        await relay.wait_connected()
        relay.send_line(b"{not json\n")
        relay.send_line(b'{"type":"surprise"}\n')
        relay.send_line(b'{"type":"event","channel":"pi-agent-ask:started","data":{"version":1}}\n')
        relay.send_line(
            b'{"type":"event","channel":"pi-agent-ask:started","data":"' + b"x" * 10_000 + b'"}\n'
        )
        relay.send_line(b'{"type":"error","code":"bad_json","message":"you sent junk"}\n')
        relay.open_form(FORM, "call-2")
        flow = await flows.next(timeout=T)
        assert flow.flow_id == "tool:call-2"
        assert transport.is_connected


@pytest.mark.asyncio
async def test_session_end_fails_pending_waits_and_reconnects(relay: FakeRelay) -> None:
    transport = RelayTransport(relay.path)
    async with BridgeClient(transport) as client:
        flows = client.flows()
        events = client.events()
        relay.open_form(FORM, "call-3")
        flow = await flows.next(timeout=T)
        relay.host.close()  # the host goes quiet: this submit will never be acknowledged
        deploy = flow.question("deploy")
        ticket = await client.submit(
            flow, AnswerBuilder(flow).select(deploy, deploy.value("no")).build()
        )
        await relay.end_session("new")
        lost = await client.await_result(ticket, timeout=T)
        assert lost.kind == "lost"
        kinds = [(await events.next(timeout=T)).kind for _ in range(2)]
        assert kinds == ["started", "session_ended"]
        await relay.wait_connected()
        relay.open_form(FORM, "call-4")  # a form of the next session reaches the same client
        again = await flows.next(timeout=T)
        assert again.flow_id == "tool:call-4"
        assert transport.connections == 2


@pytest.mark.asyncio
async def test_pi_exiting_disconnects_and_ends_the_streams(tmp_path: Path) -> None:
    relay = FakeRelay(tmp_path / "relays", pid=dead_pid())
    await relay.start()
    transport = RelayTransport(relay.path)
    async with BridgeClient(transport) as client:
        flows = client.flows()
        relay.open_form(FORM, "call-5")
        flow = await flows.next(timeout=T)
        relay.host.close()
        deploy = flow.question("deploy")
        ticket = await client.submit(
            flow, AnswerBuilder(flow).select(deploy, deploy.value("no")).build()
        )
        await relay.stop()  # the socket goes away with its (dead) Pi
        lost = await client.await_result(ticket, timeout=T)
        assert isinstance(lost, SubmitLost)
        assert lost.reason == "disconnected"
        with pytest.raises(ConnectionLost):
            await flows.next(timeout=T)
        assert not transport.is_connected


@pytest.mark.asyncio
async def test_unsafe_directory_and_socket_are_refused(relay: FakeRelay) -> None:
    os.chmod(relay.directory, 0o750)
    with pytest.raises(UnsafeRelayPath, match="700"):
        await BridgeClient(RelayTransport(relay.path)).open()
    os.chmod(relay.directory, 0o700)
    os.chmod(relay.path, 0o666)
    with pytest.raises(UnsafeRelayPath, match="0600"):
        await BridgeClient(RelayTransport(relay.path)).open()


@pytest.mark.asyncio
async def test_discovery_finds_live_relays_only(tmp_path: Path) -> None:
    directory = tmp_path / "relays"
    with pytest.raises(NoRelayFound):
        resolve_relay(directory=directory)
    first = FakeRelay(directory)
    await first.start()
    stale = directory / f"pi-{dead_pid()}.sock"
    stale.touch()
    try:
        assert [info.pid for info in discover_relays(directory)] == [os.getpid()]
        assert resolve_relay(directory=directory).path == first.path
        second = FakeRelay(directory, pid=os.getppid())
        await second.start()
        try:
            with pytest.raises(AmbiguousRelay) as several:
                resolve_relay(directory=directory)
            assert str(os.getppid()) in str(several.value)
            assert resolve_relay(pid=os.getppid(), directory=directory).path == second.path
        finally:
            await second.stop()
    finally:
        await first.stop()


@pytest.mark.asyncio
async def test_send_without_a_connection_is_a_typed_error(relay: FakeRelay) -> None:
    transport = RelayTransport(relay.path, reconnect=False)
    client = BridgeClient(transport)
    await client.open()
    events = client.events()
    relay.open_form(FORM, "call-6")
    flow = await client.flows().next(timeout=T)
    await relay.stop()
    assert (await events.next(timeout=T)).kind == "started"
    ended = await events.next(timeout=T)
    assert ended.kind == "session_ended"
    assert ended.reason == "disconnected"
    deploy = flow.question("deploy")
    with pytest.raises(ConnectionLost):
        await client.submit(flow, AnswerBuilder(flow).select(deploy, deploy.value("no")).build())
    await client.close()


@pytest.mark.asyncio
async def test_open_returns_once_every_announced_replay_arrived(relay: FakeRelay) -> None:
    relay.open_form(FORM, "call-r1")
    relay.open_form(FORM, "call-r2")
    relay.split_replays = True  # hello alone first, each replay in a later write
    async with BridgeClient(RelayTransport(relay.path)) as client:
        assert list(client.open_flows) == ["tool:call-r1", "tool:call-r2"]
