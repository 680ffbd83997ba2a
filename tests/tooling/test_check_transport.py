"""``check_transport``: the Transport contract kit passes on the memory transport, and fails,
naming the check, on transports that break the contract."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from pi_ask_core import STARTED, SUBMIT_RESULT, SubmitEvent
from pi_ask_sdk import AnswerBuilder, BridgeClient, SubmitAccepted
from pi_ask_sdk.testing import (
    CHECKS,
    AskParams,
    FakeHost,
    TransportCheckFailed,
    check_transport,
    yes_no_params,
)
from pi_ask_sdk.transports import MemoryTransport
from pi_ask_sdk.transports.base import TransportListener

from .conftest import TIMEOUT


@pytest.mark.asyncio
@pytest.mark.parametrize("order", ["completed_first", "ack_first"])
async def test_the_memory_transport_passes_every_check(order: str) -> None:
    host = FakeHost(order=order)  # type: ignore[arg-type]

    def open_form(params: AskParams, tool_call_id: str) -> None:
        host.open(params, tool_call_id=tool_call_id)

    passed = await check_transport(host.transport, open_form, timeout=TIMEOUT)
    assert passed == list(CHECKS)


class _NoReplay(MemoryTransport):
    async def open(self, listener: TransportListener) -> None:
        class Filter:
            def message(self, channel: str, data: object, *, replay: bool = False) -> None:
                if not replay:
                    listener.message(channel, data, replay=replay)

            def ended(self, reason: object) -> None:
                listener.ended(reason)  # type: ignore[arg-type]

        await super().open(Filter())


class _SendsAfterClose(MemoryTransport):
    async def send(self, payload: SubmitEvent) -> None:
        if self._listener is not None:
            await super().send(payload)


class _Garbles(MemoryTransport):
    async def open(self, listener: TransportListener) -> None:
        class Garble:
            def message(self, channel: str, data: object, *, replay: bool = False) -> None:
                if channel == STARTED and not replay:
                    listener.message(channel, b"{not json", replay=False)
                listener.message(channel, data, replay=replay)

            def ended(self, reason: object) -> None:
                listener.ended(reason)  # type: ignore[arg-type]

        await super().open(Garble())


class _NeverOpens(MemoryTransport):
    async def open(self, listener: TransportListener) -> None:
        await asyncio.Event().wait()  # (check_transport bounds it)


class _NoVerdicts(MemoryTransport):
    async def open(self, listener: TransportListener) -> None:
        class Drop:
            def message(self, channel: str, data: object, *, replay: bool = False) -> None:
                if channel != SUBMIT_RESULT:
                    listener.message(channel, data, replay=replay)

            def ended(self, reason: object) -> None:
                listener.ended(reason)  # type: ignore[arg-type]

        await super().open(Drop())


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("kind", "check"),
    [
        (_NeverOpens, "open"),
        (_Garbles, "one_decoded_form"),
        (_NoReplay, "replay"),
        (_NoVerdicts, "rejected_submit"),
        (_SendsAfterClose, "close"),
    ],
)
async def test_a_broken_transport_fails_the_check_it_breaks(
    kind: type[MemoryTransport], check: str
) -> None:
    host = FakeHost()

    def open_form(params: AskParams, tool_call_id: str) -> None:
        host.open(params, tool_call_id=tool_call_id)

    with pytest.raises(TransportCheckFailed) as caught:
        await check_transport(lambda: kind(host.bus, host.host), open_form, timeout=TIMEOUT)
    assert caught.value.check == check
    assert str(caught.value).startswith(f"Transport check {check!r} failed: "), caught.value
    assert check in CHECKS


class _Recording(MemoryTransport):
    """A subclass that watches submits by overriding send() only."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sent: list[SubmitEvent] = []

    async def send(self, payload: SubmitEvent) -> None:
        self.sent.append(payload)
        await super().send(payload)


@pytest.mark.asyncio
async def test_a_subclass_that_overrides_send_still_sees_every_submit() -> None:
    # A subclass that records, delays or fails submits in send() sees every one of them.
    host = FakeHost()
    transport = _Recording(host.bus, host.host)
    async with BridgeClient(transport) as client:
        host.open(yes_no_params(), tool_call_id="c1")
        flow = await client.flows().next(timeout=TIMEOUT)
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        outcome = await client.respond(flow, answer, timeout=TIMEOUT)
    assert isinstance(outcome, SubmitAccepted)
    assert [(p.request_id, p.flow_id) for p in transport.sent] == [
        (outcome.ticket.request_id, "tool:c1")
    ]
    assert msgspec.to_builtins(transport.sent[0].response) == {
        "kind": "answer",
        "mode": "submit",
        "answers": {"deploy": {"values": ["yes"]}},
    }
