"""Faults, on a real nats-server: each test names what it kills, and counts every form: each
ends answered once (one accepted submit, and the host given each submit once) or ended on the
host's side and reported so, never lost, never answered twice. Every wait is bounded."""

from __future__ import annotations

import asyncio
from collections import Counter

import msgspec
import pytest
from nats.js.api import DeliverPolicy

from pi_ask_core import SUBMIT_RESULT, AnswerResponse, RemoteAnswer, SubmitEvent, decode_event
from pi_ask_core import SubmitAck as SubmitAckEvent
from pi_ask_sdk import BridgeClient, SubmitAccepted, SubmitNotSent, SubmitRejected
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.fleet._transport import encode_submit, submit_msg_id
from pi_ask_sdk.fleet.follow import Follower
from pi_ask_sdk.fleet.protocol import Header
from pi_ask_sdk.outcomes import FlowCompleted, SessionEnded, SubmitLost, SubmitTimedOut
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .conftest import Host
from .kit import (
    Answerer,
    BridgeProcess,
    ForwarderProcess,
    all_done,
    assert_each_form_once,
    local_no,
    submits_per_request,
    yes,
)


@pytest.mark.asyncio
async def test_the_nats_server_killed_and_restarted_mid_form(
    host: Host, fleet: Fleet, nats_server: NatsServer
) -> None:
    """Kills: the nats-server (SIGKILL) while five forms wait for the bridge; restarts it on
    the same store. Meanwhile the host opens five more and its user answers one itself."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    bridge = Answerer(fleet, "h1", relay.pid)
    await bridge.start()
    before = [relay.open_form(yes_no_params(), f"before-{n}") for n in range(5)]
    await bridge.wait_seen(5)

    nats_server.kill()
    during = [relay.open_form(yes_no_params(), f"during-{n}") for n in range(5)]
    before[0].complete(local_no())  # the user at the host answers one meanwhile
    nats_server.start()

    await bridge.wait_seen(10, timeout=60)
    bridge.gate.set()
    handles = before + during
    await all_done(handles, 60)
    await bridge.wait_outcomes(10, 60)  # one respond per form it saw, each with its outcome
    accepted = Counter({h.flow_id: bridge.accepted(h.flow_id) for h in handles})
    assert_each_form_once(relay, handles, accepted, {before[0].flow_id})
    await bridge.stop()


@pytest.mark.asyncio
async def test_the_forwarder_killed_and_restarted_mid_form(host: Host, fleet: Fleet) -> None:
    """Kills: the forwarder process (SIGKILL) while forms are open; the bridge answers them
    while it is away (the submits wait in the stream), the host opens two more and its user
    answers one itself; then a new forwarder process starts."""
    relay = await host.start_pi()
    forwarder = ForwarderProcess(host.url, "h1", host.directory)
    forwarder.start()
    try:
        await fleet.wait_pi("h1", relay.pid, timeout=30)
        await relay.wait_connected(1, 30)
        bridge = Answerer(fleet, "h1", relay.pid)
        await bridge.start()
        first = [relay.open_form(yes_no_params(), f"first-{n}") for n in range(4)]
        await bridge.wait_seen(4)

        forwarder.kill()
        bridge.gate.set()  # submits for the four forms go to the stream, nobody takes them yet
        gap = [relay.open_form(yes_no_params(), f"gap-{n}") for n in range(2)]
        first[3].complete(local_no())
        forwarder.start()

        handles = first + gap
        await all_done(handles, 60)
        await bridge.wait_seen(6, timeout=30)
        await bridge.wait_outcomes(6, timeout=60)
        await bridge.wait_settled()
        assert all(h.state == "completed" for h in handles)
        # The submits that waited in the stream were given to the host once each. A form
        # ended unseen (first-3) makes the restarted forwarder reset the bridges' view (a new
        # epoch): the bridge learns its pending submits' fate as lost ("may have been
        # applied"), and the forms replayed after the reset may be answered again, which the
        # host refuses: never accepted twice, never a submit given to the host twice.
        assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}
        for handle in first[:3]:
            outcomes = bridge.outcomes[handle.flow_id]
            assert bridge.accepted(handle.flow_id) <= 1, outcomes
            assert isinstance(outcomes[0], (SubmitAccepted, SubmitLost)), outcomes
            for later in outcomes[1:]:
                assert isinstance(later, (SubmitRejected, SubmitNotSent)), outcomes
        assert bridge.accepted(first[3].flow_id) == 0
        for handle in gap:  # opened while the forwarder was away: delivered, answered once
            assert bridge.accepted(handle.flow_id) == 1
        await bridge.stop()
    finally:
        forwarder.stop()


@pytest.mark.asyncio
async def test_a_paused_bridge_resumes_without_answering_twice(host: Host, fleet: Fleet) -> None:
    """Pauses: a bridge process (SIGSTOP) that answers the "p-" forms, while four of them open,
    the host's user answers one of those, and another bridge answers four "o-" forms; then
    SIGCONT. The paused bridge answers the three still open, once each."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    paused = BridgeProcess(host.url, "h1", relay.pid, "p-")
    paused.start()
    try:
        assert await paused.next(30) == {"ready": "1"}
        other = Answerer(fleet, "h1", relay.pid, only="o-")
        other.gate.set()
        await other.start()

        paused.pause()
        mine = [relay.open_form(yes_no_params(), f"p-{n}") for n in range(4)]
        theirs = [relay.open_form(yes_no_params(), f"o-{n}") for n in range(4)]
        mine[0].complete(local_no())
        await all_done(theirs, 30)
        await other.wait_outcomes(4)
        assert all(h.is_open for h in mine[1:])
        paused.resume()

        await all_done(mine, 60)
        outcomes: dict[str, list[str]] = {}
        while sum(v.count("accepted") for v in outcomes.values()) < 3:
            line = await paused.next(30)
            outcomes.setdefault(line["flow"], []).append(line["outcome"])
        for handle in mine + theirs:
            total = other.accepted(handle.flow_id) + outcomes.get(handle.flow_id, []).count(
                "accepted"
            )
            assert total == (0 if handle is mine[0] else 1), (handle.tool_call_id, total)
        assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}
        await other.stop()
    finally:
        paused.stop()


@pytest.mark.asyncio
async def test_a_bridge_that_reconnects_finds_what_is_still_open(host: Host, fleet: Fleet) -> None:
    """Disconnects: a bridge's whole NATS connection (closed), while forms open and end; a new
    connection finds exactly the forms still open, and answers each once."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handles = [relay.open_form(yes_no_params(), f"r-{n}") for n in range(6)]
    async with (
        Fleet(host.url, heartbeat=0.2) as gone,
        BridgeClient(gone.transport("h1", relay.pid)) as client,
    ):
        flows = client.flows()
        for _ in range(2):
            flow = await flows.next(timeout=10)
            assert isinstance(await client.respond(flow, yes(flow), timeout=10), SubmitAccepted)
    # away: the host's user answers one, and two more open
    open_now = [h for h in handles if h.is_open]
    open_now[0].complete(local_no())
    handles += [relay.open_form(yes_no_params(), f"r-late-{n}") for n in range(2)]
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        still = {h.flow_id for h in handles if h.is_open}
        # The snapshot holds no form that ended; forms opened a moment ago may still be on
        # their way to the stream, and come live.
        assert set(client.open_flows) <= still
        flows = client.flows()  # the open ones first, then the live ones
        answered: set[str] = set()
        while answered != still:
            flow = await flows.next(timeout=10)
            assert flow.flow_id in still
            assert isinstance(await client.respond(flow, yes(flow), timeout=10), SubmitAccepted)
            answered.add(flow.flow_id)
    assert all(h.state == "completed" for h in handles)
    assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}


@pytest.mark.asyncio
async def test_a_submit_delivered_twice_is_given_to_pi_once(host: Host, fleet: Fleet) -> None:
    """Duplicates: one submit published three times: twice with the same Nats-Msg-Id (the
    stream stores it once) and once more under another id after it was answered (the
    forwarder's requestId book answers it again with the same acknowledgement)."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "dup")
    flow_id = handle.flow_id
    results: asyncio.Queue[bytes] = asyncio.Queue()
    tid = "dupbridge"
    follower = Follower(
        fleet.js,
        fleet.names.results_stream,
        fleet.names.result("h1", relay.pid, tid),
        lambda msg: results.put_nowait(msg.data),
        policy=DeliverPolicy.NEW,
    )
    await follower.start(10)
    submit = SubmitEvent(
        request_id="same-rid",
        flow_id=flow_id,
        response=AnswerResponse(answers={"deploy": RemoteAnswer(values=["yes"])}),
    )
    body = encode_submit(submit)
    subject = fleet.names.submit("h1", relay.pid)
    msg_id = submit_msg_id(tid, flow_id, "same-rid")
    for _ in range(2):
        await fleet.js.publish(subject, body, headers={Header.BRIDGE: tid, Header.MSG_ID: msg_id})
    first = decode_event(SUBMIT_RESULT, await asyncio.wait_for(results.get(), 10))
    assert isinstance(first, SubmitAckEvent)
    await all_done([handle], 10)
    await fleet.js.publish(subject, body, headers={Header.BRIDGE: tid, Header.MSG_ID: "other"})
    again = await asyncio.wait_for(results.get(), 10)
    assert msgspec.json.decode(again) == msgspec.to_builtins(first)  # the same acknowledgement
    assert submits_per_request(relay) == Counter({(flow_id, "same-rid"): 1})
    assert results.empty()
    await follower.stop()


@pytest.mark.asyncio
async def test_a_completion_missed_while_paused_is_never_shown_open(
    host: Host, fleet: Fleet
) -> None:
    """Stops reading: a bridge whose transport is closed while its form is answered elsewhere
    and a new one opens; the next transport is replayed only the new one."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    old = relay.open_form(yes_no_params(), "old")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        events = client.events()
        flows = client.flows()
        seen = await flows.next(timeout=10)
        assert seen.tool_call_id == "old"
        old.complete(local_no())
        event = await events.next(timeout=10)
        while not isinstance(event, FlowCompleted):
            assert not isinstance(event, SessionEnded)
            event = await events.next(timeout=10)
        assert event.flow_id == seen.flow_id
    new = relay.open_form(yes_no_params(), "new")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        assert [f.tool_call_id for f in client.open_flows.values()] == ["new"]
    assert new.is_open


@pytest.mark.asyncio
async def test_a_submit_sent_while_the_server_is_down(
    host: Host, fleet: Fleet, nats_server: NatsServer
) -> None:
    """Kills: the nats-server (SIGKILL) before the bridge answers three open forms; the
    bridge answers while it is down, and the server restarts (same store) meanwhile. Each
    answer is applied once; the bridge learns each outcome, or times out ("may have been
    applied"), never a false "not sent"."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handles = [relay.open_form(yes_no_params(), f"down-{n}") for n in range(3)]
    async with BridgeClient(fleet.transport("h1", relay.pid, send_timeout=20)) as client:
        flows = client.flows()
        seen = [await flows.next(timeout=10) for _ in handles]
        nats_server.kill()
        answers = [
            asyncio.create_task(client.respond(flow, yes(flow), timeout=30)) for flow in seen
        ]
        await asyncio.sleep(0)  # one step each: their submits go out while the server is down
        nats_server.start()
        outcomes = await asyncio.wait_for(asyncio.gather(*answers), 90)
    await all_done(handles, 30)
    assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}
    for outcome in outcomes:
        assert isinstance(outcome, (SubmitAccepted, SubmitTimedOut)), outcome
    assert all(h.state == "completed" for h in handles)
