"""Faults, on a real nats-server: each test names what it kills, and counts every form: each
ends answered once (one accepted submit, and the host given each submit once) or ended on the
host's side and reported so, never lost, never answered twice. Every wait is bounded."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from pi_ask_sdk import BridgeClient, SubmitAccepted, SubmitNotSent, SubmitRejected
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.outcomes import (
    FlowCompleted,
    SessionEnded,
    SubmitTimedOut,
)
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .conftest import Host
from .kit import (
    Answerer,
    BridgeProcess,
    ForwarderProcess,
    Retrying,
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
    """Kills: the forwarder process (SIGKILL) while four forms are open; the bridge answers
    them while it is away (not sent: nothing is stored for later, it retries), the host opens
    two more and its user answers one itself; then a new forwarder process starts (once the
    killed one's lease has expired). Every form ends (lost 0); none is accepted twice and the
    host's user's form by no bridge (doubled 0)."""
    relay = await host.start_pi()
    forwarder = ForwarderProcess(host.url, "h1", host.directory)
    forwarder.start()
    bridge = Retrying()
    stop = asyncio.Event()
    serving = asyncio.create_task(serve(bridge.handler, fleet, stop=stop))
    try:
        await fleet.wait_pi("h1", relay.pid, timeout=30)
        await relay.wait_connected(1, 30)
        first = [relay.open_form(yes_no_params(), f"first-{n}") for n in range(4)]
        forwarder.kill()
        bridge.gate.set()  # the four are answered while no forwarder runs: not sent, retried
        gap = [relay.open_form(yes_no_params(), f"gap-{n}") for n in range(2)]
        first[3].complete(local_no())
        forwarder.start()
        handles = first + gap
        await all_done(handles, 90)
        await bridge.settled(60)
        assert all(h.state == "completed" for h in handles)  # lost 0
        for handle in handles:  # doubled 0
            expected = 0 if handle is first[3] else 1
            assert bridge.accepted(handle.flow_id) <= expected, bridge.outcomes[handle.flow_id]
        for handle in gap:  # opened while the forwarder was away: answered once it is back
            assert bridge.accepted(handle.flow_id) == 1, bridge.outcomes.get(handle.flow_id)
    finally:
        stop.set()
        await asyncio.wait_for(serving, 15)
        await bridge.stop()
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
    answer is applied at most once; the bridge learns each outcome, times out ("may have been
    applied") or is told "not sent"; its retry answers the form, or is refused when the first
    one did: every form ends, answered once (lost 0, doubled 0)."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handles = [relay.open_form(yes_no_params(), f"down-{n}") for n in range(3)]
    async with BridgeClient(fleet.transport("h1", relay.pid, send_timeout=20)) as client:
        flows = client.flows()
        seen = [await flows.next(timeout=10) for _ in handles]
        nats_server.kill()
        answers = [
            asyncio.create_task(client.respond(flow, yes(flow), request_id=f"r-{n}", timeout=30))
            for n, flow in enumerate(seen)
        ]
        await asyncio.sleep(0)  # one step each: their submits go out while the server is down
        nats_server.start()
        outcomes = await asyncio.wait_for(asyncio.gather(*answers), 90)
        for n, (flow, outcome) in enumerate(zip(seen, outcomes, strict=True)):
            assert isinstance(outcome, (SubmitAccepted, SubmitTimedOut, SubmitNotSent)), outcome
            if isinstance(outcome, SubmitAccepted):
                continue
            # Its id is still the pending submit's (a timed-out ticket stays valid), so the
            # retry is a new submit: Pi refuses it if the first one reached it.
            retry = await client.respond(flow, yes(flow), request_id=f"again-{n}", timeout=30)
            assert isinstance(retry, (SubmitAccepted, SubmitRejected)), retry
            if isinstance(retry, SubmitRejected):
                assert retry.error == "flow_not_found", retry
    await all_done(handles, 30)
    assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}
    assert all(h.state == "completed" for h in handles)  # lost 0; the host completes once
