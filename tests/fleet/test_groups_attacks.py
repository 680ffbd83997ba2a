"""Replica groups attacked on a real nats-server: a replica whose handler ends (returns, or
raises) while its Pi stays up and nothing changes in the fleet. In a group that replica alone is
shown its forms, so it must serve the Pi again; every form is counted at its host: answered
exactly once (lost 0, doubled 0). Every wait is bounded."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, FleetPi
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .conftest import Host
from .kit import all_done, yes
from .test_groups import GROUP, Answered


class SeenOpen(Fleet):
    """A replica of ``GROUP`` that tells when ``serve`` last said a Pi's client is open (the
    supervisor then has nothing left to do for it until the fleet changes or the Pi is looked
    at again)."""

    def __init__(self, url: str, bridge_id: str) -> None:
        super().__init__(url, group=GROUP, heartbeat=0.2, bridge_id=bridge_id)
        self.open_seen = asyncio.Event()

    async def follow(
        self, found: Callable[[FleetPi], bool], stop: asyncio.Event, *, timeout: float = 10.0
    ) -> None:
        def spied(pi: FleetPi) -> bool:
            is_open = found(pi)
            if is_open:
                self.open_seen.set()
            return is_open

        await super().follow(spied, stop, timeout=timeout)


class EndsTwice:
    """A replica's handler that holds its forms unanswered and ends when told: its first call
    raises, its second returns; from the third on it answers every form it is shown."""

    def __init__(self) -> None:
        self.calls = 0
        self.started = [asyncio.Event() for _ in range(3)]
        self.end = [asyncio.Event() for _ in range(2)]

    async def handler(self, client: BridgeClient, pi: FleetPi) -> None:
        self.calls += 1
        call = self.calls
        self.started[min(call, 3) - 1].set()
        if call == 1:
            await self.end[0].wait()
            raise RuntimeError("a handler's bug")
        if call == 2:
            await self.end[1].wait()
            return
        await answer_all(client)


async def answer_all(client: BridgeClient) -> None:
    async for flow in client.flows():
        assert isinstance(await client.respond(flow, yes(flow), timeout=10), SubmitAccepted)


@pytest.mark.asyncio
async def test_a_replica_whose_handler_ends_serves_its_pi_again(
    host: Host, nats_server: NatsServer
) -> None:
    """Two replicas serve one Pi with ``serve(handler, fleet)``; replica "ra" holds its forms,
    then its handler ends twice (raises, then returns), each time after ``serve`` had seen its
    client open. Nothing changes in the fleet (the Pi stays up, the forwarder alive, both
    replicas heartbeat), yet "ra" is served again each time and every one of 30 forms is
    answered once, "ra"'s own by "ra"."""
    relay = await host.start_pi()
    await host.start_forwarder()
    ends = EndsTwice()

    async def rb_handler(client: BridgeClient, pi: FleetPi) -> None:
        await answer_all(client)

    stop = asyncio.Event()
    async with (
        SeenOpen(nats_server.url, "ra") as ra,
        Fleet(nats_server.url, group=GROUP, heartbeat=0.2, bridge_id="rb") as rb,
    ):
        assert await ra.wait_group(2, 10) == ("ra", "rb")
        assert await rb.wait_group(2, 10) == ("ra", "rb")
        await ra.wait_pi("h1", relay.pid)
        answered = Answered([relay])
        handles = [relay.open_form(yes_no_params(), f"f-{n}") for n in range(30)]
        serving = [
            asyncio.create_task(serve(ends.handler, ra, stop=stop, request_id_prefix="ra")),
            asyncio.create_task(serve(rb_handler, rb, stop=stop, request_id_prefix="rb")),
        ]
        try:
            for n in range(2):
                await asyncio.wait_for(ends.started[n].wait(), 10)
                ra.open_seen.clear()
                await asyncio.wait_for(ra.open_seen.wait(), 10)
                ends.end[n].set()
            await asyncio.wait_for(ends.started[2].wait(), 10)  # served again, twice
            await all_done(handles, 30)
            assert all(h.state == "completed" for h in handles)  # lost 0
            assert {f: n for f, n in answered.ok.items() if n != 1} == {}  # doubled 0
            assert set(answered.ok) == {h.flow_id for h in handles}
            assert answered.by["ra"] >= 3  # its forms were its own to answer, and it did
            assert answered.by["ra"] + answered.by["rb"] == len(handles)
        finally:
            stop.set()
            for task in serving:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 15)
