"""Direct submits on a real nats-server: while a host's forwarder lives, a bridge's submit is a
core NATS request it answers with the submit-result, stored in no stream; what a bridge relies
on when that path fails (no answer in time, a Pi not followed, a cancelled wait, a killed
forwarder, a second forwarder) is that each submit reaches Pi at most once and each outcome
it is told is true. Every wait is bounded."""

from __future__ import annotations

import asyncio
import base64
import os
from collections import Counter

import pytest
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from pi_ask_core import (
    SUBMIT_RESULT,
    AnswerResponse,
    RemoteAnswer,
    SubmitAck,
    SubmitEvent,
    decode_event,
)
from pi_ask_sdk import (
    AnswerBuilder,
    BridgeClient,
    ClientStream,
    FlowView,
    SubmitAccepted,
    SubmitNotSent,
)
from pi_ask_sdk.fleet import Fleet, Forwarder
from pi_ask_sdk.fleet._transport import encode_submit, submit_msg_id
from pi_ask_sdk.fleet.follow import Follower
from pi_ask_sdk.fleet.protocol import Header
from pi_ask_sdk.outcomes import (
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    RespondOutcome,
    SessionEnded,
    SubmitLost,
    SubmitTimedOut,
)
from pi_ask_sdk.testing import yes_no_params

from .conftest import Host
from .kit import ForwarderProcess, all_done, local_no, relay_answered, submits_per_request, yes


async def stored(fleet: Fleet, stream: str) -> int:
    """How many messages ``stream`` ever stored (its last sequence: SUBMITS is a work queue,
    which deletes what it delivered)."""
    return int((await fleet.js.stream_info(stream)).state.last_seq)


async def taking(host: Host) -> Forwarder:
    """Host's forwarder, started and taking direct submits."""
    forwarder = await host.start_forwarder()
    await forwarder.wait_taking_submits(20)
    return forwarder


@pytest.mark.asyncio
async def test_a_submit_to_a_live_forwarder_goes_direct_and_is_stored_nowhere(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "direct")
    watched: asyncio.Queue[Msg] = asyncio.Queue()
    watch = await fleet.nc.subscribe(fleet.names.all_replied, cb=watched.put)
    transport = fleet.transport("h1", relay.pid)
    async with BridgeClient(transport) as client:
        flow = await client.flows().next(timeout=10)
        outcome = await client.respond(flow, yes(flow), timeout=10)
        assert isinstance(outcome, SubmitAccepted), outcome
    assert handle.state == "completed"
    assert relay_answered(relay, flow.flow_id) == 1
    assert await stored(fleet, fleet.names.submits_stream) == 0
    assert await stored(fleet, fleet.names.results_stream) == 0
    # watchers (pi-ask watch) still see the result, on the core feed of its transport
    seen = await asyncio.wait_for(watched.get(), 10)
    assert seen.subject == fleet.names.replied("h1", relay.pid, transport.transport_id)
    submit_id = submit_msg_id(transport.transport_id, flow.flow_id, outcome.ticket.request_id, 1)
    assert (seen.headers or {}).get(Header.SUBMIT) == submit_id
    verdict = decode_event(SUBMIT_RESULT, seen.data)
    assert isinstance(verdict, SubmitAck)
    assert verdict.request_id == outcome.ticket.request_id
    await watch.unsubscribe()


class Ghost:
    """A bridge transport that publishes raw submits to SUBMITS and follows its RESULTS."""

    def __init__(self, fleet: Fleet, pid: int, transport_id: str = "ghost") -> None:
        self.fleet = fleet
        self.pid = pid
        self.transport_id = transport_id
        self.results: asyncio.Queue[Msg] = asyncio.Queue()
        self.follower = Follower(
            fleet.js,
            fleet.names.results_stream,
            fleet.names.result("h1", pid, transport_id),
            self.results.put_nowait,
            policy=DeliverPolicy.NEW,
        )

    async def publish(self, flow_id: str, request_id: str, *, resent: bool, copy: str = "") -> str:
        """The submit ``request_id`` for ``flow_id`` ("yes"), as a bridge's transport stores
        it (``resent``: after its direct request got no answer in time); ``copy`` makes its
        ``Nats-Msg-Id`` another one (JetStream stores it again)."""
        names = self.fleet.names
        submit = SubmitEvent(
            request_id=request_id,
            flow_id=flow_id,
            response=AnswerResponse(answers={"deploy": RemoteAnswer(values=["yes"])}),
        )
        submit_id = submit_msg_id(self.transport_id, flow_id, request_id)
        headers = {
            Header.BRIDGE: self.transport_id,
            Header.SUBMIT: submit_id,
            Header.MSG_ID: submit_id + copy,
        }
        if resent:
            headers[Header.RESENT] = "1"
        await self.fleet.js.publish(
            names.submit("h1", self.pid), encode_submit(submit), headers=headers
        )
        return submit_id

    async def result(self) -> tuple[SubmitAck, str]:
        """The next submit-result in RESULTS for this transport, and its submit id."""
        msg = await asyncio.wait_for(self.results.get(), 10)
        verdict = decode_event(SUBMIT_RESULT, msg.data)
        assert isinstance(verdict, SubmitAck), verdict
        return verdict, (msg.headers or {}).get(Header.SUBMIT, "")


@pytest.mark.asyncio
async def test_a_resent_submit_is_given_to_pi_only_for_an_open_form_it_never_got(
    host: Host, fleet: Fleet
) -> None:
    """A re-sent submit (its direct request got no answer in time, and the forwarder that may
    have taken it is not the one reading it) for a form that ended, by a bridge's answer or
    the host's user, is never given to Pi (it would say flow_not_found, maybe falsely); for a
    form still open it is, once, and its result is stored in RESULTS."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    answered = relay.open_form(yes_no_params(), "answered")
    local = relay.open_form(yes_no_params(), "local")
    still = relay.open_form(yes_no_params(), "still")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        events = client.events()
        flows = client.flows()
        views = {f.tool_call_id: f for f in [await flows.next(timeout=10) for _ in range(3)]}
        first = views["answered"]
        assert isinstance(await client.respond(first, yes(first), timeout=10), SubmitAccepted)
        local.complete(local_no())
        # the forwarder published local's completion: its relay link knows it ended
        event = await events.next(timeout=10)
        while not (isinstance(event, FlowCompleted) and event.flow_id == local.flow_id):
            event = await events.next(timeout=10)

    ghost = Ghost(fleet, relay.pid)
    await ghost.follower.start(10)
    try:
        await ghost.publish(answered.flow_id, "g-answered", resent=True)
        await ghost.publish(local.flow_id, "g-local", resent=True)
        submit_id = await ghost.publish(still.flow_id, "g-still", resent=True)
        # One consumer takes the host's submits in order: once the third's result is in,
        # the first two were taken (and dropped).
        verdict, result_id = await ghost.result()
        assert (verdict.request_id, verdict.flow_id, result_id) == (
            "g-still",
            still.flow_id,
            submit_id,
        )
        counts = submits_per_request(relay)
        assert counts[(answered.flow_id, "g-answered")] == 0
        assert counts[(local.flow_id, "g-local")] == 0
        assert counts[(still.flow_id, "g-still")] == 1
        assert still.state == "completed"
        # the same submit once more (stored again: another Nats-Msg-Id): the book answers it
        # with the same result, and Pi is not given it again
        await ghost.publish(still.flow_id, "g-still", resent=True, copy="-again")
        again, again_id = await ghost.result()
        assert (again, again_id) == (verdict, submit_id)
        assert submits_per_request(relay)[(still.flow_id, "g-still")] == 1
        assert ghost.results.empty()
    finally:
        await ghost.follower.stop()


@pytest.mark.asyncio
async def test_a_respond_cancelled_while_its_direct_request_waits_ends_at_once(
    host: Host, fleet: Fleet
) -> None:
    """A slow Pi holds the submit-result; the bridge's respond is cancelled while its direct
    request waits: it raises CancelledError at once (well before the 2 s after which the
    submit would go through SUBMITS), sends nothing more, and its transport takes the next
    submit."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    held_form = relay.open_form(yes_no_params(), "held")
    relay.open_form(yes_no_params(), "next")
    relay.hold = asyncio.Event()
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flows = client.flows()
        views = {f.tool_call_id: f for f in [await flows.next(timeout=10) for _ in range(2)]}
        held = views["held"]
        answer = asyncio.create_task(client.respond(held, yes(held), timeout=30))
        await relay.wait_submits(1, 10)  # given to Pi: the request waits for its result
        answer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(answer, 1.5)
        assert answer.cancelled()
        relay.hold.set()  # Pi answers; the reply finds nobody waiting
        await all_done([held_form], 10)
        after = views["next"]
        assert isinstance(await client.respond(after, yes(after), timeout=10), SubmitAccepted)
    assert relay_answered(relay, held.flow_id) == 1
    assert await stored(fleet, fleet.names.submits_stream) == 0  # the cancelled one: no re-send


@pytest.mark.asyncio
async def test_a_direct_submit_for_a_pi_the_forwarder_does_not_follow_is_not_sent(
    host: Host, fleet: Fleet
) -> None:
    """The Pi lives but its relay stopped listening (the forwarder retries it, the fleet
    still shows the Pi up): a bridge's direct submit is answered "not sent" (SubmitNotSent,
    never accepted nor rejected), and the form, still open in Pi, is answered once its relay
    is back. A submit for a Pi the host never had is "not sent" too."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "kept")
    started = handle.started_event()
    assert started is not None
    view: FlowView = FlowView.from_started(started)
    async with BridgeClient(fleet.transport("h1", relay.pid)) as watcher:
        events = watcher.events()
        await watcher.flows().next(timeout=10)
        await relay.stop()  # Pi still runs; its forwarder's link reconnects (for 10 s)
        event = await events.next(timeout=10)
        while not isinstance(event, SessionEnded):
            event = await events.next(timeout=10)
        assert event.reason == "session_ended"
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        assert dict(client.open_flows) == {}  # the fleet's view: the form is gone ...
        outcome = await client.respond(view, yes(view), timeout=10)
        assert isinstance(outcome, SubmitNotSent), outcome
        assert relay_answered(relay, handle.flow_id) == 0
        assert handle.is_open  # ... Pi's: still open
        await relay.start()  # the relay is back: its form is replayed, and answered
        flow = await client.flows().next(timeout=15)
        assert flow.flow_id == handle.flow_id
        assert isinstance(await client.respond(flow, yes(flow), timeout=10), SubmitAccepted)
    assert relay_answered(relay, handle.flow_id) == 1

    nobody = SubmitEvent(
        request_id="r",
        flow_id="f",
        response=AnswerResponse(answers={"deploy": RemoteAnswer(values=["yes"])}),
    )
    reply = await fleet.nc.request(
        fleet.names.direct("h1", 4_000_000),
        encode_submit(nobody),
        timeout=10,
        headers={Header.BRIDGE: "raw", Header.SUBMIT: "raw-1"},
    )
    assert (reply.headers or {}).get(Header.STATUS) == "not_sent"
    assert b"4000000" in reply.data


@pytest.mark.asyncio
async def test_a_burst_of_500_direct_submits_over_five_pis_is_each_accepted_once(
    host: Host, fleet: Fleet
) -> None:
    relays = [await host.start_pi() for _ in range(5)]
    await taking(host)
    for relay in relays:
        await fleet.wait_pi("h1", relay.pid)
    handles = [relay.open_form(yes_no_params(), f"b-{n}") for relay in relays for n in range(100)]
    clients = [BridgeClient(fleet.transport("h1", relay.pid)) for relay in relays]
    try:
        views: list[tuple[BridgeClient, FlowView]] = []
        for client in clients:
            await client.open()
            flows = client.flows()
            views += [(client, await flows.next(timeout=30)) for _ in range(100)]
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(c.respond(f, yes(f), timeout=60) for c, f in views)), 120
        )
    finally:
        for client in clients:
            await client.close()
    assert Counter(type(o).__name__ for o in outcomes) == Counter({"SubmitAccepted": 500})
    await all_done(handles, 30)
    for relay in relays:
        assert Counter(submits_per_request(relay).values()) == Counter({1: 100})


@pytest.mark.asyncio
async def test_a_submit_over_64_kib_with_a_lone_surrogate_goes_direct(
    host: Host, fleet: Fleet
) -> None:
    """A note of 300 KB (sent compressed) that holds a lone surrogate: the host gets the
    note with U+FFFD in its place, through the direct path."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "big")
    noise = base64.b64encode(os.urandom(225_000)).decode()
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flow = await client.flows().next(timeout=10)
        question = flow.question("deploy")
        answer = (
            AnswerBuilder(flow)
            .select(question, question.value("yes"))
            .note(question, f"half \ud83d an emoji {noise}")
            .build()
        )
        outcome = await client.respond(flow, answer, timeout=20)
        assert isinstance(outcome, SubmitAccepted), outcome
    [emit] = [m for m in relay.received if m.get("type") == "emit"]
    assert emit["data"]["response"]["answers"]["deploy"]["note"] == f"half \ufffd an emoji {noise}"
    assert handle.state == "completed"
    assert await stored(fleet, fleet.names.submits_stream) == 0


@pytest.mark.asyncio
async def test_the_forwarder_killed_with_direct_submits_in_flight(host: Host, fleet: Fleet) -> None:
    """Kills: the forwarder process (SIGKILL) once it gave three submits to a slow Pi, which
    applies them after; three more are sent while it is away; a new forwarder starts. Each
    submit reaches Pi once; no bridge is told something false: never rejected (a re-sent
    copy of an applied submit is not given to Pi again, which would say flow_not_found),
    never "not sent" for a submit Pi got."""
    relay = await host.start_pi()
    forwarder = ForwarderProcess(host.url, "h1", host.directory)
    forwarder.start()
    try:
        await forwarder.wait_log("taking the submits of host h1")
        await fleet.wait_pi("h1", relay.pid, timeout=30)
        handles = [relay.open_form(yes_no_params(), f"k-{n}") for n in range(6)]
        async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
            flows = client.flows()
            views = [await flows.next(timeout=10) for _ in handles]
            relay.hold = asyncio.Event()
            answers: list[asyncio.Task[RespondOutcome]] = []
            for view in views[:3]:
                answers.append(asyncio.create_task(client.respond(view, yes(view), timeout=40)))
            await relay.wait_submits(3, 10)  # given to Pi, direct: no result yet
            forwarder.kill()
            relay.hold.set()  # Pi applies them: their results go to a dead connection
            await all_done(handles[:3], 10)
            for view in views[3:]:
                answers.append(asyncio.create_task(client.respond(view, yes(view), timeout=40)))
            forwarder.start()
            outcomes = await asyncio.wait_for(asyncio.gather(*answers), 90)
        await all_done(handles, 30)
    finally:
        forwarder.stop()
    assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}
    for handle, outcome in zip(handles, outcomes, strict=True):
        assert isinstance(outcome, (SubmitAccepted, SubmitLost, SubmitTimedOut)), outcome
        assert relay_answered(relay, handle.flow_id) == 1, handle.tool_call_id


async def answer_each_once(client: BridgeClient, events: ClientStream[BridgeEvent], n: int) -> None:
    """Answer the next ``n`` forms the client is shown, each accepted, until each completed;
    no form may be shown twice."""
    shown: list[str] = []
    completed = 0
    while completed < n:
        event = await events.next(timeout=10)
        if isinstance(event, FlowStarted):
            shown.append(event.flow.flow_id)
            assert shown.count(event.flow.flow_id) == 1, f"shown twice: {event.flow.tool_call_id}"
            outcome = await client.respond(event.flow, yes(event.flow), timeout=10)
            assert isinstance(outcome, SubmitAccepted), outcome
        elif isinstance(event, FlowCompleted):
            completed += 1
        else:
            raise AssertionError(event)


@pytest.mark.asyncio
async def test_a_second_forwarder_of_one_host_waits_to_take_over(host: Host, fleet: Fleet) -> None:
    """A second forwarder of the same host (a restart that overlaps the old one, or one
    started twice): while the first one takes the host's submits it follows no relay (the
    bridges would be shown each form twice) and takes no submit, and it stops when told;
    once the first one stops it takes over. Each form is shown once and each submit reaches
    Pi once, before and after."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    standby = [Forwarder(host.url, host_id="h1", directory=host.directory, poll=0.05)]
    second = standby[0]
    await second.open()
    stop = asyncio.Event()
    running = asyncio.create_task(second.run(stop))
    try:
        async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
            events = client.events()
            for n in range(5):
                relay.open_form(yes_no_params(), f"t-{n}")
            await answer_each_once(client, events, 5)
            assert second.pids == []
            await host.stop_forwarder()
            await second.wait_taking_submits(30)
            third = Forwarder(host.url, host_id="h1", directory=host.directory, poll=0.05)
            standby.append(third)
            await third.open()
            stop_third = asyncio.Event()
            waiting = asyncio.create_task(third.run(stop_third))
            for n in range(5, 10):
                relay.open_form(yes_no_params(), f"t-{n}")
            await answer_each_once(client, events, 5)
            assert third.pids == []
            stop_third.set()  # it stops while it waits to take over
            await asyncio.wait_for(waiting, 5)
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
        for forwarder in standby:
            await forwarder.close()
    assert Counter(submits_per_request(relay).values()) == Counter({1: 10})
