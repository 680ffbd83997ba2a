"""One road per submit, on a real nats-server: a bridge's submit is a core NATS request to its
host's one forwarder, which gives it to Pi at most once and answers with the submit-result
(pi_ask_sdk.fleet.delivery draws the rules). What a bridge relies on when it fails (a lost
reply, no forwarder, a cancelled wait, a killed forwarder, a second forwarder) is that each
submit reaches Pi at most once and each outcome it is told is true. Every wait is bounded;
every fault test counts every form: lost 0, doubled 0."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections import Counter

import pytest
from nats.aio.msg import Msg

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
from pi_ask_sdk.fleet.delivery import NOT_SENT, encode_submit
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
from .kit import ForwarderProcess, all_done, relay_answered, submits_per_request, yes


async def taking(host: Host) -> Forwarder:
    """Host's forwarder, started and taking submits."""
    forwarder = await host.start_forwarder()
    await forwarder.wait_taking_submits(20)
    return forwarder


def yes_submit(flow_id: str, request_id: str) -> bytes:
    """The bytes of the submit ``request_id`` ("yes") for ``flow_id``, as a transport sends
    them (the same for each of its retries)."""
    submit = SubmitEvent(
        request_id=request_id,
        flow_id=flow_id,
        response=AnswerResponse(answers={"deploy": RemoteAnswer(values=["yes"])}),
    )
    return encode_submit(submit)


@pytest.mark.asyncio
async def test_a_submit_is_a_request_to_the_forwarder_and_is_stored_nowhere(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "direct")
    watched: asyncio.Queue[Msg] = asyncio.Queue()
    watch = await fleet.nc.subscribe(fleet.names.all_results, cb=watched.put)
    transport = fleet.transport("h1", relay.pid)
    async with BridgeClient(transport) as client:
        flow = await client.flows().next(timeout=10)
        outcome = await client.respond(flow, yes(flow), timeout=10)
        assert isinstance(outcome, SubmitAccepted), outcome
    assert handle.state == "completed"
    assert relay_answered(relay, flow.flow_id) == 1
    # JetStream keeps forms, Pi states and presence: no stream of submits or results
    names = sorted(info.config.name or "" for info in await fleet.js.streams_info())
    assert names == sorted([fleet.names.flows_stream, fleet.names.forwarders_stream])
    # watchers (pi-ask watch) still see the result, on the core feed of its Pi
    seen = await asyncio.wait_for(watched.get(), 10)
    assert seen.subject == fleet.names.result("h1", relay.pid)
    verdict = decode_event(SUBMIT_RESULT, seen.data)
    assert isinstance(verdict, SubmitAck)
    assert verdict.request_id == outcome.ticket.request_id
    await watch.unsubscribe()


@pytest.mark.asyncio
async def test_a_lost_reply_then_a_retry_with_the_same_id_is_answered_from_the_ledger(
    host: Host, fleet: Fleet
) -> None:
    """A submit's reply is lost (its bridge stopped listening: a reply subject nobody reads);
    Pi applied it. The bridge sends it again with the same request id: the forwarder answers
    from its ledger (the same verdict), and Pi is not given it again. A corrected submit under
    the same id after a verdict is another submit: it reaches Pi."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "lost")
    subject = fleet.names.submit("h1", relay.pid)
    body = yes_submit(handle.flow_id, "r-lost")
    await fleet.nc.publish(subject, body, reply="_INBOX.nobody-reads-this")
    await all_done([handle], 10)  # Pi applied it; its reply went nowhere
    reply = await fleet.nc.request(subject, body, timeout=10)
    verdict = decode_event(SUBMIT_RESULT, reply.data)
    assert isinstance(verdict, SubmitAck), verdict
    assert (verdict.flow_id, verdict.request_id) == (handle.flow_id, "r-lost")
    again = await fleet.nc.request(subject, body, timeout=10)
    assert again.data == reply.data
    assert submits_per_request(relay)[(handle.flow_id, "r-lost")] == 1


@pytest.mark.asyncio
async def test_a_retry_while_the_first_is_in_flight_waits_for_its_verdict(
    host: Host, fleet: Fleet
) -> None:
    """A slow Pi holds the first copy; the same submit comes again meanwhile: the second
    request is answered with the first one's verdict, and Pi is given it once."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "slow")
    relay.hold = asyncio.Event()
    subject = fleet.names.submit("h1", relay.pid)
    body = yes_submit(handle.flow_id, "r-slow")
    first = asyncio.create_task(fleet.nc.request(subject, body, timeout=20))
    await relay.wait_submits(1, 10)
    second = asyncio.create_task(fleet.nc.request(subject, body, timeout=20))
    await asyncio.sleep(0)  # (the second request is on its way; Pi still holds the first)
    relay.hold.set()
    replies = await asyncio.wait_for(asyncio.gather(first, second), 30)
    assert replies[0].data == replies[1].data
    assert isinstance(decode_event(SUBMIT_RESULT, replies[0].data), SubmitAck)
    assert submits_per_request(relay)[(handle.flow_id, "r-slow")] == 1


@pytest.mark.asyncio
async def test_no_forwarder_means_not_sent_within_the_send_timeout(
    host: Host, fleet: Fleet
) -> None:
    """Stops: the host's forwarder, while a bridge still follows its Pi (the bridge counts it
    alive until its timeout). A submit then finds no forwarder: "not sent" (nothing sent, safe
    to retry) within ``send_timeout``, and the form is still open in Pi. With a forwarder
    back, the retry under the same request id is accepted, and Pi got it once."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "alone")
    async with BridgeClient(fleet.transport("h1", relay.pid, send_timeout=2.0)) as client:
        flow = await client.flows().next(timeout=10)
        await host.stop_forwarder()
        began = time.monotonic()
        outcome = await client.respond(flow, yes(flow), request_id="r-alone", timeout=10)
        waited = time.monotonic() - began
        assert isinstance(outcome, SubmitNotSent), outcome
        assert waited < 2.0 + 1.0, waited
        assert handle.is_open
        assert relay_answered(relay, handle.flow_id) == 0
        await taking(host)
        await fleet.wait_forwarder("h1", 20)
        again = await client.respond(flow, yes(flow), request_id="r-alone", timeout=10)
    assert isinstance(again, SubmitAccepted), again
    assert relay_answered(relay, handle.flow_id) == 1


@pytest.mark.asyncio
async def test_a_submit_racing_a_forwarder_that_has_just_taken_the_host_is_accepted(
    host: Host, fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Holds: a new forwarder between taking the host (its first heartbeat) and taking its
    submits. A bridge's submit in between reaches nobody (the server's "no responders"); the
    bridge does not say "not sent" while the host's forwarder heartbeats within its send
    timeout: it sends again once it beats again, and the submit is accepted, given to Pi once."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "racing")
    released = asyncio.Event()
    take_submits = Forwarder._take_submits

    async def held(forwarder: Forwarder) -> None:
        await released.wait()
        await take_submits(forwarder)

    nobody = asyncio.Event()  # the submit found nobody: the bridge waits for a heartbeat
    next_beat = fleet.next_forwarder_beat

    async def waited(host_id: str, timeout: float) -> bool:
        nobody.set()
        return await next_beat(host_id, timeout)

    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flow = await client.flows().next(timeout=10)
        await host.stop_forwarder()
        monkeypatch.setattr(Forwarder, "_take_submits", held)
        monkeypatch.setattr(fleet, "next_forwarder_beat", waited)
        back = await host.start_forwarder()
        responding = asyncio.create_task(
            client.respond(flow, yes(flow), request_id="r-racing", timeout=20)
        )
        # (a bridge that says "not sent" at once ends its respond first)
        found_nobody = asyncio.create_task(nobody.wait())
        await asyncio.wait(
            [responding, found_nobody], timeout=10, return_when=asyncio.FIRST_COMPLETED
        )
        found_nobody.cancel()
        released.set()  # the forwarder takes the submits now
        await back.wait_taking_submits(20)
        outcome = await asyncio.wait_for(responding, 30)
    assert isinstance(outcome, SubmitAccepted), outcome
    assert relay_answered(relay, handle.flow_id) == 1
    assert not handle.is_open


@pytest.mark.asyncio
async def test_a_respond_cancelled_while_its_request_waits_ends_at_once(
    host: Host, fleet: Fleet
) -> None:
    """A slow Pi holds the submit-result; the bridge's respond is cancelled while its request
    waits: it raises CancelledError at once, sends nothing more, and its transport takes the
    next submit."""
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


@pytest.mark.asyncio
async def test_a_verdict_that_comes_after_the_timeouts_is_still_delivered(
    host: Host, fleet: Fleet
) -> None:
    """A slow Pi holds the submit-result past the transport's ``send_timeout`` and the
    respond's own timeout: the bridge is told ``SubmitTimedOut`` (it may have been applied;
    never "not sent"), within ``send_timeout`` + that timeout, as the delivery table says.
    When Pi's verdict does come, the forwarder's reply reaches the transport late and is
    delivered: the same ticket's wait gives ``SubmitAccepted``, and Pi was given it once."""
    relay = await host.start_pi()
    await taking(host)
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "tardy")
    relay.hold = asyncio.Event()
    async with BridgeClient(fleet.transport("h1", relay.pid, send_timeout=1.0)) as client:
        flow = await client.flows().next(timeout=10)
        began = time.monotonic()
        outcome = await client.respond(flow, yes(flow), timeout=1.0)
        waited = time.monotonic() - began
        assert isinstance(outcome, SubmitTimedOut), outcome
        assert waited < 1.0 + 1.0 + 1.0, waited  # send_timeout + the respond's timeout
        assert handle.is_open
        relay.hold.set()  # Pi answers now: its verdict finds no send waiting for it
        late = await client.await_result(outcome.ticket, timeout=10)
    assert isinstance(late, SubmitAccepted), late
    assert handle.state == "completed"
    assert relay_answered(relay, handle.flow_id) == 1


@pytest.mark.asyncio
async def test_a_submit_for_a_pi_the_forwarder_does_not_follow_is_not_sent(
    host: Host, fleet: Fleet
) -> None:
    """The Pi lives but its relay stopped listening (the forwarder retries it, the fleet
    still shows the Pi up): a bridge's submit is answered "not sent" (SubmitNotSent,
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
        fleet.names.submit("h1", 4_000_000), encode_submit(nobody), timeout=10
    )
    assert (reply.headers or {}).get(Header.STATUS) == NOT_SENT
    assert b"4000000" in reply.data


@pytest.mark.asyncio
async def test_a_burst_of_500_concurrent_submits_over_five_pis_is_each_accepted_once(
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
async def test_a_300_kb_submit_with_a_lone_surrogate_arrives_with_a_replacement_character(
    host: Host, fleet: Fleet
) -> None:
    """A note of 300 KB (sent compressed) that holds a lone surrogate: the host gets the
    note with U+FFFD in its place."""
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


@pytest.mark.asyncio
async def test_the_forwarder_killed_with_submits_in_flight(host: Host, fleet: Fleet) -> None:
    """Kills: the forwarder process (SIGKILL) once it gave three submits to a slow Pi, which
    loses them with its connection (never applied); three more are sent while it is away; a
    new forwarder starts and the bridge retries each with the same request id. No bridge is
    told something false (never accepted, rejected nor "not sent" for a submit Pi got), the
    forms stay open until their retry, and each form is answered once: lost 0, doubled 0."""
    relay = await host.start_pi()
    forwarder = ForwarderProcess(host.url, "h1", host.directory)
    forwarder.start()
    try:
        await forwarder.wait_log("taking the submits of host h1")
        await fleet.wait_pi("h1", relay.pid, timeout=30)
        handles = [relay.open_form(yes_no_params(), f"k-{n}") for n in range(6)]
        async with BridgeClient(fleet.transport("h1", relay.pid, send_timeout=2)) as client:
            flows = client.flows()
            views = [await flows.next(timeout=10) for _ in handles]
            relay.hold = asyncio.Event()
            answers: list[asyncio.Task[RespondOutcome]] = []
            for n, view in enumerate(views[:3]):
                answers.append(
                    asyncio.create_task(
                        client.respond(view, yes(view), request_id=f"k-{n}", timeout=5)
                    )
                )
            await relay.wait_submits(3, 10)  # given to Pi: no verdict yet
            forwarder.kill()
            await relay.drop_held()  # Pi never applies them (their connection is gone)
            relay.hold = None
            for n, view in enumerate(views[3:], start=3):
                answers.append(
                    asyncio.create_task(
                        client.respond(view, yes(view), request_id=f"k-{n}", timeout=5)
                    )
                )
            outcomes = await asyncio.wait_for(asyncio.gather(*answers), 60)
        assert all(h.is_open for h in handles)  # nothing applied: lost 0 so far
        for outcome in outcomes:
            assert isinstance(outcome, (SubmitTimedOut, SubmitLost, SubmitNotSent)), outcome
        forwarder.start()
        await forwarder.wait_log("taking the submits of host h1", timeout=60)
        async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
            await fleet.wait_forwarder("h1", 30)
            retried = [
                await client.respond(view, yes(view), request_id=f"k-{n}", timeout=20)
                for n, view in enumerate(views)
            ]
        await all_done(handles, 30)
    finally:
        forwarder.stop()
    assert Counter(type(o).__name__ for o in retried) == Counter({"SubmitAccepted": 6}), retried
    for n, handle in enumerate(handles):
        assert handle.state == "completed"
        # doubled 0: Pi got each retry once (the first three also got their first copy, lost
        # with its connection before Pi applied it)
        assert relay_answered(relay, handle.flow_id) == (2 if n < 3 else 1), handle.tool_call_id


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
    started twice): while the first one holds the host's lease it follows no relay (the
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
