"""Two bridges on one in-process bus that use the same ``requestId``: each waiter resolves only
from the verdict on its own submit (issue 8, the in-process side of the relay's ``own`` mark)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from pi_ask_core import (
    SUBMIT,
    SUBMIT_RESULT,
    CancelResponse,
    FlowHost,
    LocalEventBus,
    SubmitAck,
    SubmitEvent,
)
from pi_ask_sdk import BridgeClient, Cancel, SubmitAccepted, SubmitTimedOut
from pi_ask_sdk.transports import memory
from pi_ask_sdk.transports.base import EndReason
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
        assert id(bus) not in memory._SENDING.by_bus


class Recorder:
    """A transport listener that keeps the verdicts it is handed."""

    def __init__(self) -> None:
        self.verdicts: list[tuple[str, str]] = []

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        if isinstance(data, SubmitAck):
            self.verdicts.append((data.request_id, data.flow_id))

    def ended(self, reason: EndReason) -> None:
        pass


def test_two_threads_emitting_on_one_bus_keep_their_own_marks() -> None:
    """Thread B's submit is emitted first and its emit ends while the main thread's (A) is
    still going: neither client takes the other's verdict (same requestId), and no mark is
    left behind in either thread."""
    bus = LocalEventBus()
    b_inside, a_inside, b_done = threading.Event(), threading.Event(), threading.Event()

    def host(data: object) -> None:  # answers inside the emit, in the order set up above
        assert isinstance(data, dict)
        if data["flowId"] == "tool:b":
            b_inside.set()
            assert a_inside.wait(TIMEOUT)
        else:
            a_inside.set()
            assert b_done.wait(TIMEOUT)
        bus.emit(SUBMIT_RESULT, SubmitAck(request_id=data["requestId"], flow_id=data["flowId"]))

    bus.on(SUBMIT, host)
    one, two = MemoryTransport(bus), MemoryTransport(bus)
    heard_one, heard_two = Recorder(), Recorder()
    asyncio.run(one.open(heard_one))
    asyncio.run(two.open(heard_two))
    left_in_b: list[int] = []

    def submit(transport: MemoryTransport, flow_id: str) -> None:
        payload = SubmitEvent(request_id="same", flow_id=flow_id, response=CancelResponse())
        asyncio.run(transport.send(payload))

    def in_b() -> None:
        try:
            submit(two, "tool:b")
            left_in_b.append(len(memory._SENDING.by_bus))
        finally:
            b_done.set()

    thread = threading.Thread(target=in_b)
    thread.start()
    try:
        assert b_inside.wait(TIMEOUT)
        submit(one, "tool:a")
    finally:
        a_inside.set()
        thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert heard_one.verdicts == [("same", "tool:a")]
    assert heard_two.verdicts == [("same", "tool:b")]
    assert left_in_b == [0]
    assert id(bus) not in memory._SENDING.by_bus
