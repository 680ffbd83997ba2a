"""End to end through a real Pi: BridgeClient over RelayTransport, the relay and the test host.

One Pi serves the whole module; each test opens its own forms and leaves none open.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import struct
from collections.abc import Iterator

import pytest

from pi_ask_core import CompletedEvent, StartedEvent
from pi_ask_sdk import (
    AnswerBuilder,
    Cancel,
    FlowAlreadyAnswered,
    FlowCompleted,
    FlowId,
    SubmitAccepted,
    SubmitRejected,
)
from pi_ask_sdk.transports.relay import (
    RelayTransport,
    discover_relays,
    resolve_relay,
)
from tests.integration.pi_process import (
    TIMEOUT,
    PiProcess,
    choose,
    invalid_answer,
    next_event,
    next_flow,
    single_question,
)

pytestmark = pytest.mark.pi


@pytest.fixture(autouse=True)
def no_form_left_open(module_pi: PiProcess) -> Iterator[None]:
    """Each test leaves Pi without open forms (cancelled here so the next test starts clean;
    a disposed form would stay in the relay's replay list: dispose emits no event)."""
    yield
    left = module_pi.open_flow_ids()
    for flow_id in left:
        module_pi.cancel_form(flow_id)
    assert left == [], f"forms left open: {left}"


SUBMIT_LINE = (
    '{{"type":"emit","channel":"pi-agent-ask:submit","data":{{"version":1,"requestId":"{rid}",'
    '"flowId":"{fid}","response":{{"kind":"answer","answers":{{"q":{{"values":["a"]}}}}}}}}}}\n'
)


@pytest.mark.asyncio
async def test_started_submit_result_and_completed(module_pi: PiProcess) -> None:
    async with module_pi.client() as client:
        transport = client.transport
        assert isinstance(transport, RelayTransport)
        assert transport.hello is not None
        assert transport.hello.pid == module_pi.pid
        assert transport.hello.pi_version == module_pi.env.version
        flows = client.flows()
        events = client.events()
        flow_id = module_pi.open_form(single_question(), tool_call_id="e2e-1")
        flow = await next_flow(flows, flow_id)
        assert not flow.replay
        assert flow.tool_call_id == "e2e-1"
        assert str(flow.title) == "Choose"
        assert flow.question("q").values == ("a", "b")

        question = flow.question("q")
        answer = (
            AnswerBuilder(flow)
            .select(question, question.value("b"))
            .note(question, "why not")
            .build()
        )
        outcome = await client.await_result(await client.submit(flow, answer), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        completed = await next_event(events, "completed", flow_id)
        assert isinstance(completed, FlowCompleted)
        assert completed.tool_call_id == "e2e-1"
        assert not completed.result.cancelled
        answered = completed.result.answers["q"]
        assert (answered.values, answered.labels, answered.indices) == (["b"], ["Beta"], [2])
        assert answered.note == "why not"
        assert flow_id not in client.open_flows
        with pytest.raises(FlowAlreadyAnswered):  # this client's own submit was accepted
            await client.submit(flow, answer)
    assert flow_id not in module_pi.open_flow_ids()


@pytest.mark.asyncio
async def test_invalid_submit_keeps_form_open_then_corrected_one_succeeds(
    module_pi: PiProcess,
) -> None:
    async with module_pi.client() as client:
        flows = client.flows()
        flow_id = module_pi.open_form(single_question())
        flow = await next_flow(flows, flow_id)
        refused = await client.respond(flow, invalid_answer(flow), timeout=TIMEOUT)
        assert isinstance(refused, SubmitRejected)
        assert refused.error == "invalid_answer"
        assert refused.flow_still_open
        assert '"nope"' in refused.message.render()
        assert flow_id in client.open_flows
        assert flow_id in module_pi.open_flow_ids()

        good = choose(flow, "a")
        accepted = await client.respond(flow, good, timeout=TIMEOUT)
        assert isinstance(accepted, SubmitAccepted)
    assert flow_id not in module_pi.open_flow_ids()


@pytest.mark.asyncio
async def test_cancel_from_the_bridge_and_from_pi(module_pi: PiProcess) -> None:
    async with module_pi.client() as client:
        flows = client.flows()
        events = client.events()
        first = module_pi.open_form(single_question())
        flow = await next_flow(flows, first)
        outcome = await client.respond(flow, Cancel.of(flow), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        done = await next_event(events, "completed", first)
        assert isinstance(done, FlowCompleted)
        assert done.result.cancelled

        second = module_pi.open_form(single_question())
        await next_flow(flows, second)
        assert module_pi.cancel_form(second)  # the TUI user pressed Esc
        done = await next_event(events, "completed", second)
        assert isinstance(done, FlowCompleted)
        assert done.result.cancelled
        assert second not in client.open_flows


@pytest.mark.asyncio
async def test_late_join_replays_open_forms(module_pi: PiProcess) -> None:
    first = module_pi.open_form(single_question(), tool_call_id="late-1")
    second = module_pi.open_form(single_question("other"))
    try:
        async with module_pi.client() as client:
            # replays arrive with hello: open when open() returns
            assert list(client.open_flows)[-2:] == [first, second]
            view = client.open_flows[FlowId(first)]
            assert view.replay
            assert view.tool_call_id == "late-1"
            outcome = await client.respond(view, choose(view, "a"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
    finally:
        module_pi.cancel_form(second)
    assert module_pi.open_flow_ids() == []


@pytest.mark.asyncio
async def test_two_bridges_race_exactly_one_wins(module_pi: PiProcess) -> None:
    async with (
        module_pi.client() as one,
        module_pi.client() as two,
    ):
        flows_one, flows_two = one.flows(), two.flows()
        flow_id = module_pi.open_form(single_question())
        view_one = await next_flow(flows_one, flow_id)
        view_two = await next_flow(flows_two, flow_id)
        # both submits are written before either client reads an acknowledgement
        ticket_one = await one.submit(view_one, choose(view_one, "a"))
        ticket_two = await two.submit(view_two, choose(view_two, "b"))
        results = await asyncio.gather(
            one.await_result(ticket_one, timeout=TIMEOUT),
            two.await_result(ticket_two, timeout=TIMEOUT),
        )
        accepted = [r for r in results if isinstance(r, SubmitAccepted)]
        rejected = [r for r in results if isinstance(r, SubmitRejected)]
        assert len(accepted) == 1
        assert len(rejected) == 1
        assert rejected[0].error == "flow_not_found"
        assert not rejected[0].flow_still_open


@pytest.mark.asyncio
async def test_tool_call_from_the_faux_model_returns_the_answer(module_pi: PiProcess) -> None:
    async with module_pi.client() as client:
        flows = client.flows()
        since = module_pi.mark()
        module_pi.prompt("CALL ask_user#tc-e2e " + json.dumps(single_question()))
        flow = await next_flow(flows, "tool:tc-e2e")
        assert flow.tool_call_id == "tc-e2e"
        assert flow.source == "tool"
        outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
    record = module_pi.wait_record(
        lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == "tc-e2e",
        since=since,
    )
    assert record["toolName"] == "ask_user"
    assert record.get("isError") is False
    details = record["result"]["details"]
    assert details["cancelled"] is False
    assert details["answers"]["q"] == {"values": ["b"], "labels": ["Beta"], "indices": [2]}
    assert json.loads(record["result"]["content"][0]["text"]) == details
    module_pi.wait_idle()  # the model's reply to the result: the next test's prompt waits for it


@pytest.mark.asyncio
async def test_malformed_lines_and_forbidden_channel_leave_pi_unaffected(
    module_pi: PiProcess,
) -> None:
    reader, writer = await asyncio.open_unix_connection(
        str(module_pi.socket_path), limit=4 * 1024 * 1024
    )
    try:
        hello = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT))
        assert hello["type"] == "hello"
        assert hello["protocol"] == 1
        bad = [
            (b"this is not json\n", "bad_json"),
            (b"[1, 2]\n", "bad_message"),
            (b'{"type": 7}\n', "bad_message"),
            (b'{"type": "subscribe"}\n', "unknown_type"),
            (b'{"type": "emit", "data": {}}\n', "bad_message"),
            (
                b'{"type": "emit", "channel": "pi-agent-ask:started", "data": {}}\n',
                "forbidden_channel",
            ),
            (b'{"type": "emit", "channel": "pi-agent-ask:submit"}\n', "bad_message"),
            (b'{"type": "hello", "role": "answerer"}\n', "bad_message"),  # no version
            (b'{"type": "hello", "version": 1, "role": "boss"}\n', "bad_message"),
            (b"x" * (1024 * 1024 + 10) + b"\n", "line_too_long"),
        ]
        for line, code in bad:
            writer.write(line)
            await writer.drain()
            reply = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT))
            assert reply["type"] == "error", line[:60]
            assert reply["code"] == code, line[:60]
        writer.write(b"\n   \n")  # blank lines are ignored: no reply
        # a submit carrying U+2028 inside a JSON string, split only on b"\n"
        flow_id = module_pi.open_form(single_question())
        started = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT))
        assert started["data"]["flowId"] == flow_id
        line = SUBMIT_LINE.format(rid="raw\u2028id", fid=flow_id).encode()
        writer.write(line)
        await writer.drain()
        seen = [json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT)) for _ in range(2)]
        result = next(m for m in seen if m["channel"] == "pi-agent-ask:submit-result")
        assert result["data"] == {
            "version": 1,
            "requestId": "raw\u2028id",
            "flowId": flow_id,
            "ok": True,
        }
    finally:
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), TIMEOUT)
    # Pi is fine, and the SDK still works on it
    assert module_pi.request({"type": "get_state"})["success"] is True
    async with module_pi.client() as client:
        flows = client.flows()
        flow_id = module_pi.open_form(single_question())
        flow = await next_flow(flows, flow_id)
        outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)


@pytest.mark.asyncio
async def test_transport_decodes_typed_structs(module_pi: PiProcess) -> None:
    seen: list[tuple[str, object, bool]] = []
    completed = asyncio.Event()

    class Recorder:
        def message(self, channel: str, data: object, *, replay: bool = False) -> None:
            seen.append((channel, data, replay))
            if isinstance(data, CompletedEvent):
                completed.set()

        def ended(self, reason: str) -> None:
            seen.append(("ended", reason, False))

    transport = RelayTransport(module_pi.socket_path)
    await transport.open(Recorder())
    try:
        flow_id = module_pi.open_form(single_question())
        module_pi.cancel_form(flow_id)
        await asyncio.wait_for(completed.wait(), TIMEOUT)
        assert [type(data).__name__ for _, data, _ in seen] == ["StartedEvent", "CompletedEvent"]
        started = seen[0][1]
        assert isinstance(started, StartedEvent)
        assert started.flow_id == flow_id
        assert transport.is_connected
    finally:
        await transport.close()
        await transport.close()  # idempotent
    assert not transport.is_connected


def test_socket_and_directory_permissions(module_pi: PiProcess) -> None:
    sock = os.lstat(module_pi.socket_path)
    assert stat.S_ISSOCK(sock.st_mode)
    assert stat.S_IMODE(sock.st_mode) == 0o600
    assert sock.st_uid == os.getuid()
    directory = os.lstat(module_pi.relay_dir)
    assert stat.S_IMODE(directory.st_mode) == 0o700
    relays = discover_relays(module_pi.relay_dir)
    assert [(r.pid, r.path) for r in relays] == [(module_pi.pid, module_pi.socket_path)]
    assert resolve_relay(directory=module_pi.relay_dir).pid == module_pi.pid
    assert resolve_relay(pid=module_pi.pid, directory=module_pi.relay_dir).path == (
        module_pi.socket_path
    )


@pytest.mark.asyncio
async def test_clients_that_vanish_or_stop_reading_leave_pi_unaffected(
    module_pi: PiProcess,
) -> None:
    # One client resets its connection mid-stream; another never reads a byte.
    vanishing = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    vanishing.connect(str(module_pi.socket_path))
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(str(module_pi.socket_path))
    try:
        async with module_pi.client() as client:
            flows = client.flows()
            vanishing.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            vanishing.close()  # RST while the relay is writing to it
            big = single_question()
            big["title"] = "x" * 1_000_000  # ten of these pass the relay's 8 MiB stall mark
            for n in range(10):
                flow_id = module_pi.open_form(big, tool_call_id=f"big-{n}")
                flow = await next_flow(flows, flow_id)
                outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
                assert isinstance(outcome, SubmitAccepted)
        # The stalled client held up nobody; the relay drops it only after it read nothing for
        # a while (tests/stress/test_relay_stress.py checks that drop).
    finally:
        stalled.close()
    assert module_pi.request({"type": "get_state"})["success"] is True
    assert not [r for r in module_pi.records if r.get("type") == "extension_error"]
