"""serve_every_pi: one bridge answering forms from several Pis, each on its own client."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from pi_ask_core import FlowHandle
from pi_ask_sdk import AnswerBuilder, BridgeClient
from pi_ask_sdk.every_pi import serve_every_pi
from pi_ask_sdk.transports.relay import RelayInfo

from .fake_relay import FakeRelay

FORM = {
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        }
    ]
}


def done_event(handle: FlowHandle) -> asyncio.Event:
    event = asyncio.Event()
    handle.add_done_callback(lambda _: event.set())
    return event


@pytest.mark.asyncio
async def test_every_running_pi_is_served_and_new_ones_are_picked_up(tmp_path: Path) -> None:
    directory = tmp_path / "relays"
    first = FakeRelay(directory)
    await first.start()
    served: list[int] = []

    async def deny(client: BridgeClient, info: RelayInfo) -> None:
        served.append(info.pid)
        async for flow in client.flows():
            deploy = flow.question("deploy")
            answer = AnswerBuilder(flow).select(deploy, deploy.value("no")).build()
            await client.respond(flow, answer, timeout=5)

    stop = asyncio.Event()
    bridge = asyncio.create_task(serve_every_pi(deny, directory=directory, poll=0.05, stop=stop))
    second = FakeRelay(directory, pid=os.getppid())
    try:
        await first.wait_connected(timeout=5)
        await second.start()  # a Pi that starts while the bridge runs
        await second.wait_connected(timeout=5)
        handles = [first.open_form(FORM, "call-1"), second.open_form(FORM, "call-2")]
        await asyncio.wait_for(asyncio.gather(*(done_event(h).wait() for h in handles)), 5)
        for handle in handles:
            assert handle.result is not None
            assert handle.result.answers["deploy"].values == ["no"]
        await first.end_session("quit")  # one Pi's session ends: the other is untouched
        third = second.open_form(FORM, "call-3")
        await asyncio.wait_for(done_event(third).wait(), 5)
        assert third.result is not None
    finally:
        stop.set()
        await asyncio.wait_for(bridge, 5)
        await first.stop()
        await second.stop()
    assert sorted(set(served)) == sorted({os.getpid(), os.getppid()})
