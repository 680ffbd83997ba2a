"""Two bridges on one in-process bus that use the same ``requestId``: each waiter resolves only
from the verdict on its own submit (issue 8, the in-process side of the relay's ``own`` mark)."""

from __future__ import annotations

import pytest

from pi_ask_core import SUBMIT, FlowHost, LocalEventBus
from pi_ask_sdk import BridgeClient, Cancel, SubmitAccepted, SubmitTimedOut
from pi_ask_sdk.transports import memory
from pi_ask_sdk.transports.memory import MemoryTransport

from .conftest import MULTI_FORM, TIMEOUT


class GatedBus(LocalEventBus):
    """A bus that can swallow submits, so that one bridge's submit stays unanswered."""

    __slots__ = ("swallow",)

    def __init__(self) -> None:
        super().__init__()
        self.swallow = False

    def emit(self, channel: str, data: object) -> None:
        if channel == SUBMIT and self.swallow:
            return
        super().emit(channel, data)


@pytest.mark.asyncio
async def test_a_verdict_on_another_bridges_submit_with_the_same_id_is_not_ours() -> None:
    bus = GatedBus()
    host = FlowHost(bus)
    async with (
        BridgeClient(MemoryTransport(bus, host)) as one,
        BridgeClient(MemoryTransport(bus, host)) as two,
    ):
        handle = host.start(MULTI_FORM, tool_call_id="shared")
        flow_one = await one.flows().next(timeout=TIMEOUT)
        flow_two = await two.flows().next(timeout=TIMEOUT)
        bus.swallow = True  # two's submit never reaches the host
        ticket_two = await two.submit(flow_two, Cancel(flow_two.flow_id), request_id="same")
        bus.swallow = False
        outcome_one = await one.respond(flow_one, Cancel(flow_one.flow_id), request_id="same")
        assert isinstance(outcome_one, SubmitAccepted)
        assert handle.state == "completed"
        outcome_two = await two.await_result(ticket_two, timeout=0.05)
        assert isinstance(outcome_two, SubmitTimedOut)  # its submit was never applied


@pytest.mark.asyncio
async def test_nothing_is_kept_per_bus_once_its_submits_are_emitted() -> None:
    bus = LocalEventBus()
    host = FlowHost(bus)
    async with BridgeClient(MemoryTransport(bus, host)) as client:
        host.start(MULTI_FORM, tool_call_id="kept")
        flow = await client.flows().next(timeout=TIMEOUT)
        outcome = await client.respond(flow, Cancel(flow.flow_id))
        assert isinstance(outcome, SubmitAccepted)
        assert id(bus) not in memory._SENDING
