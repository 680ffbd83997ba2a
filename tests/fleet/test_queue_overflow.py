"""The forwarder's queue of events waiting for an unreachable server is bounded, and an
overflow loses no form silently: once the server is back, the bridges' view of the Pi is reset
(a new epoch) and the forms open now are delivered again; one that ended meanwhile is not."""

from __future__ import annotations

import asyncio

import pytest

from pi_ask_core import AnswerResponse, RemoteAnswer
from pi_ask_sdk import BridgeClient
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.outcomes import FlowStarted, SessionEnded
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .conftest import Host


@pytest.mark.asyncio
async def test_an_overflow_while_the_server_is_away_resets_the_view_and_loses_no_form(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    forwarder = await host.start_forwarder(max_queued=4)
    await fleet.wait_pi("h1", relay.pid)
    early = relay.open_form(yes_no_params(), "early")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        events = client.events()
        first = await events.next(timeout=20)
        assert isinstance(first, FlowStarted)
        assert first.flow.tool_call_id == "early"
        nats_server.kill()  # the server is away: events queue in the forwarder
        later = [relay.open_form(yes_no_params(), f"later-{n}") for n in range(8)]
        early.complete(AnswerResponse(answers={"deploy": RemoteAnswer(values=["no"])}))
        link = forwarder.link(relay.pid)
        assert link is not None
        # 9 events > 4: dropped, not held for ever
        await asyncio.wait_for(link.overflowed.wait(), 20)
        nats_server.start()  # same port, same store
        ended = await events.next(timeout=60)
        while not isinstance(ended, SessionEnded):  # (anything the stream had before)
            ended = await events.next(timeout=60)
        assert ended.reason == "session_ended"
        seen: set[str] = set()
        while len(seen) < len(later):
            event = await events.next(timeout=60)
            if isinstance(event, FlowStarted):
                seen.add(event.flow.tool_call_id or "")
        assert seen == {f"later-{n}" for n in range(8)}
        assert sorted(f.tool_call_id or "" for f in client.open_flows.values()) == sorted(seen)
    async with BridgeClient(fleet.transport("h1", relay.pid)) as late:
        # a fresh snapshot agrees: the forms open now, not the one completed meanwhile
        assert sorted(f.tool_call_id or "" for f in late.open_flows.values()) == sorted(seen)
    assert all(handle.is_open for handle in later)
