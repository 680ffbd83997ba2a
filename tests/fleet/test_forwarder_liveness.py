"""A host whose forwarder died (SIGKILL) is "forwarder gone" for bridges once it has been
silent for ``forwarder_timeout``: its Pis' forms are reported ended (never open for ever, never
answered), and when a forwarder comes back the forms still open are delivered again. A server
that goes away is named as the server, by the forwarder and the bridge."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import pytest
import pytest_asyncio

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, FleetPi, FleetPiNotFound, FleetSettings
from pi_ask_sdk.outcomes import SessionEnded, SubmitLost, SubmitNotSent
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .conftest import Host
from .kit import BridgeProcess, ForwarderProcess, all_done, relay_answered, yes

TIMEOUT = 3.0  # the bridge's forwarder_timeout (10 s by default)


@pytest_asyncio.fixture
async def forwarder(host: Host) -> AsyncIterator[ForwarderProcess]:
    """``pi-ask forward`` for host h1, in its own process (killed at the end)."""
    process = ForwarderProcess(host.url, "h1", host.directory)
    yield process
    process.kill()


def watching(url: str) -> Fleet:
    return Fleet(
        url,
        settings=FleetSettings(forwarder_timeout=TIMEOUT),
        heartbeat=0.2,
        idle_heartbeat=0.5,
    )


@pytest.mark.asyncio
async def test_a_killed_forwarders_pis_are_reported_ended_and_nothing_is_answered(
    host: Host, forwarder: ForwarderProcess
) -> None:
    relay = await host.start_pi()
    forwarder.start()
    async with watching(host.url) as fleet:
        await fleet.wait_pi("h1", relay.pid, timeout=30)
        handle = relay.open_form(yes_no_params(), "kept")
        async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
            events = client.events()
            flow = await client.flows().next(timeout=15)
            forwarder.kill()  # SIGKILL, never restarted
            outcome = await client.respond(flow, yes(flow), timeout=TIMEOUT + 30)
            # Not answered, and not said to be: lost with the forwarder (or not sent, when the
            # forwarder was declared gone before the submit went out).
            assert isinstance(outcome, (SubmitLost, SubmitNotSent)), outcome
            ended = None
            while ended is None:
                event = await events.next(timeout=TIMEOUT + 30)
                if isinstance(event, SessionEnded):
                    ended = event
            assert ended.reason == "disconnected"
            assert client.open_flows == {}
        assert fleet.forwarder_alive("h1") is False
        assert [pi for pi in await fleet.pis() if pi.host == "h1"] == []
        with pytest.raises(FleetPiNotFound, match="forwarder is gone"):
            async with BridgeClient(fleet.transport("h1", relay.pid)):
                pass
    # The form is still open in Pi (its user can answer it there); no submit reached it.
    assert handle.is_open
    assert relay_answered(relay, flow.flow_id) == 0


@pytest.mark.asyncio
async def test_forms_still_open_are_served_again_when_a_forwarder_comes_back(
    host: Host, forwarder: ForwarderProcess
) -> None:
    relay = await host.start_pi()
    forwarder.start()
    seen: asyncio.Queue[tuple[int, str]] = asyncio.Queue()  # (client number, tool call id)
    ended: asyncio.Queue[int] = asyncio.Queue()
    answered: asyncio.Queue[str] = asyncio.Queue()
    clients = 0
    answer = asyncio.Event()

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        nonlocal clients
        clients += 1
        number = clients
        async for flow in client.flows():
            await seen.put((number, flow.tool_call_id or ""))
            if answer.is_set():
                outcome = await client.respond(flow, yes(flow), timeout=20)
                assert isinstance(outcome, SubmitAccepted), outcome
                await answered.put(flow.tool_call_id or "")
        await ended.put(number)

    stop = asyncio.Event()
    async with watching(host.url) as fleet:
        serving = asyncio.create_task(serve(handler, fleet, stop=stop))
        try:
            first = relay.open_form(yes_no_params(), "first")
            assert await asyncio.wait_for(seen.get(), 30) == (1, "first")
            forwarder.kill()
            # silent past the timeout: the Pi's client ends, its form is not open any more
            assert await asyncio.wait_for(ended.get(), TIMEOUT + 30) == 1
            second = relay.open_form(yes_no_params(), "second")  # while no forwarder runs
            answer.set()
            forwarder.start()  # a forwarder comes back: both forms still open are served
            again = {await asyncio.wait_for(seen.get(), 30) for _ in range(2)}
            assert again == {(2, "first"), (2, "second")}
            done = {await asyncio.wait_for(answered.get(), 30) for _ in range(2)}
            assert done == {"first", "second"}
        finally:
            stop.set()
            await asyncio.wait_for(serving, 15)
    assert not first.is_open
    assert not second.is_open
    assert relay_answered(relay, first.flow_id) == 1
    assert relay_answered(relay, second.flow_id) == 1


@pytest.mark.asyncio
async def test_a_bridge_resumed_after_a_stop_past_the_timeout_serves_every_pi_again(
    host: Host,
) -> None:
    """Stops: the bridge process (SIGSTOP) for longer than its forwarder timeout, then resumes
    it (SIGCONT). On resume it first counts the forwarder gone (its Pis' clients end), then
    hears its buffered heartbeats: its handlers, which linger 0.2 s after their stream ends,
    must be started again, and every form is answered once (lost 0, doubled 0)."""
    relay = await host.start_pi()
    await host.start_forwarder()
    bridge = BridgeProcess(host.url, "", 0, "", serve_timeout=2.5)
    bridge.start()
    try:
        assert await bridge.next(30) == {"ready": "1"}
        assert await bridge.next(30) == {"served": str(relay.pid)}
        before = relay.open_form(yes_no_params(), "before")
        assert (await bridge.next(30))["outcome"] == "accepted"
        bridge.pause()
        # The stop's length is the fault: past the bridge's forwarder timeout (2.5 s).
        await asyncio.sleep(5.0)
        bridge.resume()
        assert await bridge.next(30) == {"served": str(relay.pid)}  # served again
        after = [relay.open_form(yes_no_params(), f"after-{n}") for n in range(3)]
        outcomes = [await bridge.next(30) for _ in after]
    finally:
        bridge.stop()
    assert {o["call"] for o in outcomes} == {"after-0", "after-1", "after-2"}
    assert {o["outcome"] for o in outcomes} == {"accepted"}
    for handle in [before, *after]:
        assert not handle.is_open, handle.tool_call_id
        assert relay_answered(relay, handle.flow_id) == 1, handle.tool_call_id


class FleetLog(logging.Handler):
    """The messages logged on ``pi_ask_sdk.fleet`` (the forwarder's and the bridge's: both run
    in this process), and a bounded wait for one that holds a text."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self._logged = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self._logged.set()  # (logged on the loop's thread: the fleet's code runs there)

    async def wait(self, text: str, timeout: float) -> str:
        async def until() -> str:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                self._logged.clear()
                await self._logged.wait()

        return await asyncio.wait_for(until(), timeout)


@contextmanager
def fleet_log() -> Iterator[FleetLog]:
    logger = logging.getLogger("pi_ask_sdk.fleet")
    handler = FleetLog()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.asyncio
async def test_a_lost_server_is_named_as_the_server_by_the_forwarder_and_the_bridge(
    host: Host, nats_server: NatsServer
) -> None:
    """Kills: the nats-server (SIGKILL) under a forwarder and a bridge, past the bridge's
    forwarder timeout, with a form open; restarts it (same store). The forwarder says the
    server is unreachable (it said nothing) and then that it is back; the bridge says the
    server is unreachable, never that host h1's forwarder is gone (which it is not). The form
    is answered once the server is back (lost 0, doubled 0)."""
    relay = await host.start_pi()
    forwarder = await host.start_forwarder()
    await forwarder.wait_taking_submits(20)
    url = nats_server.url
    with fleet_log() as log:
        async with (
            watching(url) as fleet,
            BridgeClient(fleet.transport("h1", relay.pid)) as client,
        ):
            handle = relay.open_form(yes_no_params(), "across")
            flow = await client.flows().next(timeout=10)
            nats_server.kill()
            await log.wait(f"the NATS server at {url} is unreachable: events wait here", 20)
            await log.wait(
                f"the NATS server at {url} is unreachable (for {TIMEOUT:g} s): the forms of "
                "host 'h1' are ended for this bridge",
                TIMEOUT + 20,
            )
            nats_server.start()
            await log.wait(f"the NATS server at {url} is back", 30)
        # The bridge's client ended with the server's silence; a new one answers the form.
        async with watching(url) as fleet:
            await fleet.wait_pi("h1", relay.pid, timeout=30)  # (its forwarder heard again)
            async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
                [again] = client.open_flows.values()
                assert again.flow_id == flow.flow_id
                outcome = await client.respond(again, yes(again), timeout=20)
    assert isinstance(outcome, SubmitAccepted), outcome
    await all_done([handle], 10)
    assert relay_answered(relay, handle.flow_id) == 1
    assert not [line for line in log.lines if "forwarder of host 'h1' is gone" in line], log.lines
