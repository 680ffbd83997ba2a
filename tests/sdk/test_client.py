"""BridgeClient behaviour a bridge author relies on."""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_ask_core import COMPLETED, STARTED, SUBMIT, SUBMIT_RESULT, SubmitEvent
from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    BridgeClient,
    Cancel,
    ClientNotOpen,
    ConnectionLost,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    FlowCompleted,
    FlowMismatch,
    FlowStarted,
    FlowView,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitRejected,
    SubmitTimedOut,
    TransportUnavailable,
    WaitTimeout,
)
from pi_ask_sdk.errors import InvalidRequestId, UnknownTicket
from pi_ask_sdk.testing import (
    FakeHost,
    ScriptedTransport,
    UncheckedAnswer,
    unchecked_answer,
    yes_no_params,
)

from .conftest import MULTI_FORM, TIMEOUT
from .helpers import ack_payload, completed_payload, started_payload


def approve(flow: FlowView) -> Answer:
    deploy = flow.question("deploy")
    return AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()


def by_label(flow: FlowView) -> UncheckedAnswer:
    """An answer that skips the builder's checks and sends a label (the host must refuse it)."""
    return unchecked_answer(flow, {"deploy": ["Yes"]})


# --- correlation ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_accepted_in_either_order_carries_the_completion(fake: FakeHost) -> None:
    async with fake.client() as client:
        flows = client.flows()
        fake.open(yes_no_params(), tool_call_id="c1")
        flow = await flows.next(timeout=TIMEOUT)
        ticket = await client.submit(flow, approve(flow))
        outcome = await client.await_result(ticket, timeout=TIMEOUT)
    assert isinstance(outcome, SubmitAccepted)
    assert outcome.ticket is ticket
    assert outcome.completion.flow is flow
    assert outcome.completion.result.answers["deploy"].values == ["yes"]
    assert not outcome.completion.result.cancelled
    submit = fake.submits[0]
    assert isinstance(submit, dict)
    assert submit["requestId"] == ticket.request_id
    assert submit["flowId"] == "tool:c1"
    channels = [event.channel for event in fake.events if event.channel != STARTED]
    expected = [SUBMIT, COMPLETED, SUBMIT_RESULT]
    if fake.order == "ack_first":
        expected = [SUBMIT, SUBMIT_RESULT, COMPLETED]
    assert channels == expected


@pytest.mark.asyncio
async def test_acks_for_other_requests_or_flows_are_ignored() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload("tool:a"))
        transport.deliver(STARTED, started_payload("tool:b"))
        flow_a = client.open_flows["tool:a"]  # type: ignore[index]
        ticket = await client.submit(flow_a, approve(flow_a))
        # Another bridge's ack for the same flow, and our request id with the wrong flow.
        transport.deliver(SUBMIT_RESULT, ack_payload("someone-else", "tool:a"))
        transport.deliver(SUBMIT_RESULT, ack_payload(ticket.request_id, "tool:b"))
        assert isinstance(await client.await_result(ticket, timeout=0.05), SubmitTimedOut)
        assert "tool:a" in client.open_flows
        transport.deliver(SUBMIT_RESULT, ack_payload(ticket.request_id, "tool:a", ok=False))
        outcome = await client.await_result(ticket, timeout=TIMEOUT)
    assert isinstance(outcome, SubmitRejected)
    assert outcome.error == "invalid_answer"


@pytest.mark.asyncio
async def test_timeout_is_an_outcome_and_the_ticket_stays_valid() -> None:
    transport = ScriptedTransport()  # acknowledges nothing, like a Pi after shutdown
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, Cancel.of(flow))
        timed_out = await client.await_result(ticket, timeout=0.01)
        assert timed_out == SubmitTimedOut(ticket, 0.01, acknowledged=False)
        assert timed_out.kind == "timed_out"
        assert "tool:x" in client.open_flows  # a timeout is never an answer or a cancel
        transport.deliver(SUBMIT_RESULT, ack_payload(ticket.request_id, "tool:x"))
        transport.deliver(COMPLETED, completed_payload())
        outcome = await client.await_result(ticket, timeout=TIMEOUT)
    assert isinstance(outcome, SubmitAccepted)
    assert outcome.completion.result.cancelled


@pytest.mark.asyncio
async def test_a_timed_out_submit_is_sent_again_under_its_request_id() -> None:
    """The retry a remote transport makes safe: the request id of a submit whose verdict has
    not come, for the same flow, sends it again and shares its one verdict; for another flow
    it is refused (nothing sent), and a failed re-send keeps the first one's waiter."""
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload("tool:a"))
        transport.deliver(STARTED, started_payload("tool:b"))
        flow_a = client.open_flows["tool:a"]  # type: ignore[index]
        flow_b = client.open_flows["tool:b"]  # type: ignore[index]
        first = await client.respond(flow_a, Cancel.of(flow_a), timeout=0.01)
        assert isinstance(first, SubmitTimedOut)
        rid = first.ticket.request_id
        with pytest.raises(InvalidRequestId, match="another flow"):
            await client.submit(flow_b, Cancel.of(flow_b), request_id=rid)
        again = await client.submit(flow_a, Cancel.of(flow_a), request_id=rid)
        assert again.request_id == rid
        assert [s.request_id for s in transport.sent] == [rid, rid]
        transport.deliver(SUBMIT_RESULT, ack_payload(rid, "tool:a"))
        transport.deliver(COMPLETED, completed_payload("tool:a"))
        for ticket in (first.ticket, again):
            outcome = await client.await_result(ticket, timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)


@pytest.mark.asyncio
async def test_second_submit_refused_locally_and_nothing_emitted(fake: FakeHost) -> None:
    async with fake.client() as client:
        fake.open(yes_no_params(), tool_call_id="c1")
        flow = client.open_flows["tool:c1"]  # type: ignore[index]
        outcome = await client.respond(flow, approve(flow), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        submits_before = len(fake.submits)
        # Resending after this client's own submit was accepted (in either event order): what
        # the docs promise, from submit and from respond alike.
        with pytest.raises(FlowAlreadyAnswered):
            await client.submit(flow, Cancel.of(flow))
        with pytest.raises(FlowAlreadyAnswered):
            await client.respond(flow, Cancel.of(flow), timeout=TIMEOUT)
        assert len(fake.submits) == submits_before
        assert "tool:c1" not in client.open_flows


@pytest.mark.asyncio
async def test_submit_after_accept_but_before_completed_is_refused() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, approve(flow))
        transport.deliver(SUBMIT_RESULT, ack_payload(ticket.request_id, "tool:x"))
        with pytest.raises(FlowAlreadyAnswered):
            await client.submit(flow, approve(flow))
        assert len(transport.sent) == 1
        # Accepted, but its completion not seen yet: not "accepted" (no completion to give).
        outcome = await client.await_result(ticket, timeout=0.01)
        assert outcome == SubmitTimedOut(ticket, 0.01, acknowledged=True)
        transport.deliver(COMPLETED, completed_payload())
        again = await client.await_result(ticket, timeout=TIMEOUT)
        assert isinstance(again, SubmitAccepted)
        assert again.completion.flow_id == "tool:x"


@pytest.mark.asyncio
async def test_invalid_answer_keeps_the_flow_open_and_a_retry_succeeds(fake: FakeHost) -> None:
    async with fake.client() as client:
        fake.open(yes_no_params(), tool_call_id="c1")
        flow = client.open_flows["tool:c1"]  # type: ignore[index]
        refused = await client.respond(flow, by_label(flow), timeout=TIMEOUT)
        assert isinstance(refused, SubmitRejected)
        assert refused.error == "invalid_answer"
        assert refused.flow_still_open
        assert "Yes" in refused.message.render()
        assert "tool:c1" in client.open_flows
        accepted = await client.respond(flow, approve(flow), timeout=TIMEOUT)
        assert isinstance(accepted, SubmitAccepted)
    assert fake.completions
    assert len(fake.completions) == 1


@pytest.mark.asyncio
async def test_flow_not_found_forgets_the_flow(fake: FakeHost) -> None:
    async with fake.client() as client:
        events = client.events()
        handle = fake.open(yes_no_params(), tool_call_id="c1")
        flow = client.open_flows["tool:c1"]  # type: ignore[index]
        fake.dispose(handle)  # the host's UI closed: no completed event
        outcome = await client.respond(flow, approve(flow), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitRejected)
        assert outcome.error == "flow_not_found"
        assert not outcome.flow_still_open
        assert "tool:c1" not in client.open_flows
        started = await events.next(timeout=TIMEOUT)
        assert isinstance(started, FlowStarted)
        with pytest.raises(WaitTimeout):
            await events.next(timeout=0.01)  # no completion was made up


@pytest.mark.asyncio
async def test_request_ids_are_unique_and_caller_ids_checked(fake: FakeHost) -> None:
    async with fake.client(request_id_prefix="bot") as client:
        ids = set()
        for n in range(50):
            fake.open(yes_no_params(), tool_call_id=f"c{n}")
            flow = client.open_flows[f"tool:c{n}"]  # type: ignore[index]
            ticket = await client.submit(flow, approve(flow))
            assert ticket.request_id.startswith("bot-")
            assert len(ticket.request_id) > 20
            ids.add(ticket.request_id)
        assert len(ids) == 50
        fake.open(yes_no_params(), tool_call_id="own")
        flow = client.open_flows["tool:own"]  # type: ignore[index]
        with pytest.raises(InvalidRequestId):
            await client.submit(flow, approve(flow), request_id="")
        # the host would echo a lone surrogate as U+FFFD: such an id could never be matched
        with pytest.raises(InvalidRequestId, match="lone surrogate"):
            await client.submit(flow, approve(flow), request_id="lone\ud800id")
        ticket = await client.submit(flow, approve(flow), request_id="mine-1 \u00e9\U0001f600")
        assert ticket.request_id == "mine-1 \u00e9\U0001f600"
        assert isinstance(await client.await_result(ticket, timeout=TIMEOUT), SubmitAccepted)


@pytest.mark.asyncio
async def test_response_for_another_flow_is_refused(fake: FakeHost) -> None:
    async with fake.client() as client:
        fake.open(yes_no_params(), tool_call_id="a")
        fake.open(yes_no_params(), tool_call_id="b")
        flow_a = client.open_flows["tool:a"]  # type: ignore[index]
        flow_b = client.open_flows["tool:b"]  # type: ignore[index]
        with pytest.raises(FlowMismatch):
            await client.submit(flow_a, approve(flow_b))
    assert fake.submits == []


@pytest.mark.asyncio
async def test_ticket_of_another_client_is_refused(fake: FakeHost) -> None:
    async with fake.client() as one, fake.client() as two:
        fake.open(yes_no_params(), tool_call_id="a")
        flow = one.open_flows["tool:a"]  # type: ignore[index]
        ticket = await one.submit(flow, approve(flow))
        with pytest.raises(UnknownTicket):
            await two.await_result(ticket, timeout=TIMEOUT)


@pytest.mark.asyncio
async def test_two_bridges_see_each_others_acks_but_only_resolve_their_own(
    fake: FakeHost,
) -> None:
    async with fake.client() as one, fake.client() as two:
        fake.open(yes_no_params(), tool_call_id="a")
        flow_one = one.open_flows["tool:a"]  # type: ignore[index]
        flow_two = two.open_flows["tool:a"]  # type: ignore[index]
        first = await one.respond(flow_one, approve(flow_one), timeout=TIMEOUT)
        assert isinstance(first, SubmitAccepted)
        # The other bridge saw the completion and refuses locally; respond() says it was lost.
        with pytest.raises(FlowAlreadyCompleted):
            await two.submit(flow_two, approve(flow_two))
        lost = await two.respond(flow_two, approve(flow_two), timeout=TIMEOUT)
        assert lost == SubmitNotSent(flow_two.flow_id, "flow_completed")


# --- events --------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_events_stream_is_a_tagged_union(fake: FakeHost) -> None:
    async with fake.client() as client:
        events = client.events()
        handle = fake.open(yes_no_params(), tool_call_id="c1")
        fake.cancel(handle)  # the host's own user pressed Escape
        fake.end_session()
        seen = [await events.next(timeout=TIMEOUT) for _ in range(3)]
    kinds = [event.kind for event in seen]
    assert kinds == ["started", "completed", "session_ended"]
    completed = seen[1]
    assert isinstance(completed, FlowCompleted)
    assert completed.result.cancelled
    assert completed.flow is not None
    assert completed.flow.flow_id == "tool:c1"
    assert isinstance(seen[2], SessionEnded)
    assert seen[2].reason == "session_ended"


@pytest.mark.asyncio
async def test_completed_without_started_is_reported() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        events = client.events()
        transport.deliver(COMPLETED, completed_payload("tool:early"))
        event = await events.next(timeout=TIMEOUT)
    assert isinstance(event, FlowCompleted)
    assert event.flow_id == "tool:early"
    assert event.flow is None
    assert event.result.cancelled


@pytest.mark.asyncio
async def test_replayed_forms_are_marked_and_not_announced_twice() -> None:
    fake = FakeHost()
    fake.open(yes_no_params(), tool_call_id="early")
    async with fake.client() as client:
        flows = client.flows()
        first = await flows.next(timeout=TIMEOUT)
        assert first.flow_id == "tool:early"
        assert first.replay
        fake.open(yes_no_params(), tool_call_id="late")
        second = await flows.next(timeout=TIMEOUT)
        assert second.flow_id == "tool:late"
        assert not second.replay
        outcome = await client.respond(first, approve(first), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)


@pytest.mark.asyncio
async def test_live_started_after_a_replay_of_the_same_form_is_not_repeated() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        flows = client.flows()
        transport.deliver(STARTED, started_payload(), replay=True)
        transport.deliver(STARTED, {**started_payload(), "createdAt": 99})
        assert (await flows.next(timeout=TIMEOUT)).replay
        with pytest.raises(WaitTimeout):
            await flows.next(timeout=0.01)
        # A re-announcement with another form (e.g. ask:resume) is new.
        transport.deliver(STARTED, {**started_payload(), "source": "ask:resume"})
        resumed = await flows.next(timeout=TIMEOUT)
        assert resumed.source == "ask:resume"
        assert client.open_flows["tool:x"] is resumed  # type: ignore[index]


# --- untrusted input -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_other_versions_and_legacy_channels_are_ignored() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        events = client.events()
        for version in (2, "1", True, None, 0):
            transport.deliver(STARTED, {**started_payload("tool:v"), "version": version})
        transport.deliver(
            STARTED, {k: v for k, v in started_payload("tool:v").items() if k != "version"}
        )
        transport.deliver("@eko24ive/pi-ask:started", started_payload("tool:legacy"))
        transport.deliver("@eko24ive/pi-ask:completed", completed_payload("tool:legacy"))
        transport.deliver(STARTED, {**started_payload("tool:ok"), "version": 1.0})
        event = await events.next(timeout=TIMEOUT)
        assert isinstance(event, FlowStarted)
        assert event.flow.flow_id == "tool:ok"
        assert list(client.open_flows) == ["tool:ok"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _mangled(base: dict[str, object]) -> st.SearchStrategy[object]:
    """Near-misses of a valid payload: a key dropped, a value replaced, or junk."""
    keys = sorted(base)
    dropped = st.sampled_from(keys).map(lambda k: {kk: v for kk, v in base.items() if kk != k})
    replaced = st.tuples(st.sampled_from(keys), JSON).map(lambda kv: {**base, kv[0]: kv[1]})
    return dropped | replaced | JSON


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bad=st.lists(
        st.tuples(
            st.sampled_from([STARTED, COMPLETED, SUBMIT_RESULT]),
            st.sampled_from(["started", "completed", "ack"]),
        ).flatmap(
            lambda pair: st.tuples(
                st.just(pair[0]),
                _mangled(
                    {
                        "started": started_payload("tool:bad"),
                        "completed": completed_payload("tool:bad"),
                        "ack": ack_payload("r", "tool:bad"),
                    }[pair[1]]
                ),
            )
        ),
        max_size=6,
    )
)
def test_malformed_payloads_are_skipped_and_good_ones_still_flow(
    bad: list[tuple[str, object]],
) -> None:
    async def scenario() -> None:
        transport = ScriptedTransport()
        async with BridgeClient(transport) as client:
            events = client.events()
            for channel, data in bad:
                transport.deliver(channel, data)  # must never raise
            transport.deliver(STARTED, started_payload("tool:good"))
            flow = client.open_flows["tool:good"]  # type: ignore[index]
            ticket = await client.submit(flow, approve(flow))
            transport.deliver(SUBMIT_RESULT, ack_payload(ticket.request_id, "tool:good"))
            transport.deliver(COMPLETED, completed_payload("tool:good"))
            outcome = await client.await_result(ticket, timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
            while True:  # the good flow's started is among the events
                event = await events.next(timeout=TIMEOUT)
                if isinstance(event, FlowStarted) and event.flow.flow_id == "tool:good":
                    break

    asyncio.run(asyncio.wait_for(scenario(), 10))


@pytest.mark.asyncio
async def test_malformed_payload_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    transport = ScriptedTransport()
    with caplog.at_level(logging.WARNING, logger="pi_ask_sdk"):
        async with BridgeClient(transport):
            transport.deliver(STARTED, {**started_payload(), "questions": "nope"})
            transport.deliver(SUBMIT_RESULT, [1, 2])
    messages = [record.getMessage() for record in caplog.records if record.name == "pi_ask_sdk"]
    assert any("malformed" in m and STARTED in m for m in messages)
    assert any("not a JSON object" in m for m in messages)


@pytest.mark.asyncio
async def test_submits_delivered_to_a_client_are_left_to_the_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = ScriptedTransport()
    with caplog.at_level(logging.DEBUG, logger="pi_ask_sdk"):
        async with BridgeClient(transport) as client:
            transport.deliver(STARTED, started_payload("tool:open"))
            submit = {"version": 1, "requestId": "r", "flowId": "tool:open"}
            transport.deliver(SUBMIT, {**submit, "response": {"kind": "cancel"}})
            transport.deliver(SUBMIT, "not even JSON")
            assert list(client.open_flows) == ["tool:open"]
    assert [r.getMessage() for r in caplog.records if r.name == "pi_ask_sdk"] == []


@pytest.mark.asyncio
async def test_unknown_extra_fields_are_tolerated() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, {**started_payload(), "extra": {"any": 1}})
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, approve(flow))
        ack = {**ack_payload(ticket.request_id, "tool:x"), "state": {"leaked": True}}
        transport.deliver(SUBMIT_RESULT, ack)
        transport.deliver(COMPLETED, completed_payload())
        assert isinstance(await client.await_result(ticket, timeout=TIMEOUT), SubmitAccepted)


# --- session end, disconnect, close ------------------------------------------------------------


@pytest.mark.asyncio
async def test_session_end_fails_pending_waits_and_drops_flows(fake: FakeHost) -> None:
    async with fake.client() as client:
        fake.open(yes_no_params(), tool_call_id="a")
        fake.open(yes_no_params(), tool_call_id="b")
        flow_a = client.open_flows["tool:a"]  # type: ignore[index]
        flow_b = client.open_flows["tool:b"]  # type: ignore[index]
        fake.host.close()  # the runtime is gone: submits get no acknowledgement (spec L3)
        ticket = await client.submit(flow_a, approve(flow_a))
        waiting = asyncio.ensure_future(client.await_result(ticket, timeout=TIMEOUT))
        # FIFO: the waiter starts waiting first, then the session ends and must wake it.
        asyncio.get_running_loop().call_soon(fake.end_session)
        lost = await asyncio.wait_for(waiting, TIMEOUT)
        assert lost == SubmitLost(ticket, "session_ended")
        assert lost.ticket is ticket
        assert dict(client.open_flows) == {}
        with pytest.raises(ConnectionLost):
            await client.submit(flow_b, approve(flow_b))
        # respond() tells the same as a value: nothing was sent.
        gone = await client.respond(flow_b, approve(flow_b), timeout=TIMEOUT)
        assert gone == SubmitNotSent(flow_b.flow_id, "session_ended")
        assert isinstance(gone, SubmitNotSent)  # nothing was sent
        # The connection itself stays: a new session's forms arrive.
        fake.new_session()
        flows = client.flows()
        fake.open(yes_no_params(), tool_call_id="c")
        assert (await flows.next(timeout=TIMEOUT)).flow_id == "tool:c"


@pytest.mark.asyncio
async def test_disconnect_ends_streams_and_fails_waits() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        flows, events = client.flows(), client.events()
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, approve(flow))
        transport.end("disconnected")
        lost = await client.await_result(ticket, timeout=TIMEOUT)
        assert isinstance(lost, SubmitLost)
        assert (lost.reason, lost.acknowledged) == ("disconnected", False)
        assert [flow async for flow in flows] == [flow]
        remaining = [event async for event in events]
        assert [event.kind for event in remaining] == ["started", "session_ended"]
        with pytest.raises(ConnectionLost):
            await client.submit(flow, approve(flow))


@pytest.mark.asyncio
async def test_close_fails_pending_waits_and_client_must_be_open() -> None:
    transport = ScriptedTransport()
    client = BridgeClient(transport)
    with pytest.raises(ClientNotOpen):
        client.flows()
    async with client:
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, approve(flow))
    assert transport.closed
    lost = await client.await_result(ticket, timeout=TIMEOUT)
    assert isinstance(lost, SubmitLost)
    assert lost.reason == "closed"
    with pytest.raises(ClientNotOpen):
        await client.submit(flow, approve(flow))


@pytest.mark.asyncio
async def test_waiter_is_armed_before_a_synchronous_ack() -> None:
    def ack_inside_send(transport: ScriptedTransport, payload: SubmitEvent) -> None:
        transport.deliver(SUBMIT_RESULT, ack_payload(payload.request_id, payload.flow_id))
        transport.deliver(COMPLETED, completed_payload(payload.flow_id))

    transport = ScriptedTransport(on_send=ack_inside_send)
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, approve(flow))
        outcome = await client.await_result(ticket, timeout=TIMEOUT)
    assert isinstance(outcome, SubmitAccepted)
    assert outcome.completion.flow_id == "tool:x"
    assert msgspec.to_builtins(transport.sent[0])["response"] == {
        "kind": "answer",
        "mode": "submit",
        "answers": {"deploy": {"values": ["yes"]}},
    }


@pytest.mark.asyncio
async def test_foreign_thread_deliveries_are_handed_to_the_loop() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        flows = client.flows()
        await asyncio.to_thread(transport.deliver, STARTED, started_payload("tool:thread"))
        flow = await flows.next(timeout=TIMEOUT)
    assert flow.flow_id == "tool:thread"


RELAY_MODULE = "pi_ask_sdk.transports.relay"


def test_connect_uses_the_factory_it_is_given() -> None:
    transport = ScriptedTransport()
    assert BridgeClient.connect(lambda: transport).transport is transport


def test_connect_without_a_factory_uses_relay_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = ScriptedTransport()
    relay = importlib.import_module(RELAY_MODULE)
    monkeypatch.setattr(relay, "discover", lambda: transport)
    assert BridgeClient.connect().transport is transport


def test_connect_without_the_relay_module_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, RELAY_MODULE, None)  # as if it were not installed
    with pytest.raises(TransportUnavailable, match="No relay transport is installed"):
        BridgeClient.connect()


@pytest.mark.asyncio
async def test_form_with_every_question_type_round_trips(fake: FakeHost) -> None:
    async with fake.client() as client:
        fake.open(MULTI_FORM, tool_call_id="plan")
        flow = client.open_flows["tool:plan"]  # type: ignore[index]
        targets, layout = flow.question("targets"), flow.question("layout")
        answer = (
            AnswerBuilder(flow)
            .select(targets, targets.value("asia"), targets.value("eu"))
            .custom_text(targets, "moon")
            .select(layout, layout.option("list"))
            .build()
        )
        outcome = await client.respond(flow, answer, timeout=TIMEOUT)
    assert isinstance(outcome, SubmitAccepted)
    result = outcome.completion.result
    assert result.answers["targets"].values == ["asia", "eu", "moon"]
    assert result.answers["targets"].indices == [3, 1]
    assert result.answers["layout"].labels == ["List"]


@pytest.mark.asyncio
async def test_acceptance_then_session_end_is_lost_not_accepted() -> None:
    transport = ScriptedTransport()
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        ticket = await client.submit(flow, approve(flow))
        transport.deliver(SUBMIT_RESULT, ack_payload(ticket.request_id, "tool:x"))
        waiting = asyncio.ensure_future(client.await_result(ticket, timeout=TIMEOUT))
        asyncio.get_running_loop().call_soon(transport.end, "session_ended")
        lost = await asyncio.wait_for(waiting, TIMEOUT)
    assert lost == SubmitLost(ticket, "session_ended", acknowledged=True)


@pytest.mark.asyncio
async def test_completion_waits_within_the_same_bound() -> None:
    """ack first, completion later: respond waits for both, and gives the completion."""
    transport = ScriptedTransport(
        on_send=lambda t, p: t.deliver(SUBMIT_RESULT, ack_payload(p.request_id, p.flow_id))
    )
    async with BridgeClient(transport) as client:
        transport.deliver(STARTED, started_payload())
        flow = client.open_flows["tool:x"]  # type: ignore[index]
        waiting = asyncio.ensure_future(client.respond(flow, approve(flow), timeout=TIMEOUT))
        asyncio.get_running_loop().call_soon(transport.deliver, COMPLETED, completed_payload())
        outcome = await asyncio.wait_for(waiting, TIMEOUT * 2)
    assert isinstance(outcome, SubmitAccepted)
    assert outcome.completion.flow_id == "tool:x"
