"""Odd text in ids through the relay (a Python relay that writes JSON as ``JSON.stringify``
does): a form whose tool call id holds a lone UTF-16 surrogate reaches the bridge, is answered
and is replayed; a raw submit whose ids hold lone surrogates is answered, never a crash."""

from __future__ import annotations

import pytest

from pi_ask_core import AnswerResponse, RemoteAnswer, SubmitEvent
from pi_ask_sdk import AnswerBuilder, BridgeClient, FlowCompleted, FlowId, FlowStarted
from pi_ask_sdk.transports.relay import RelayTransport

from .fake_relay import FakeRelay, js_json
from .test_relay_reliability import FORM, T

LONE = "x\ud800y"
SEEN = FlowId("tool:x\ufffdy")


def test_the_double_writes_a_lone_surrogate_as_javascript_does() -> None:
    assert js_json({"flowId": f"tool:{LONE}"}) == b'{"flowId":"tool:x\\ud800y"}'


@pytest.mark.asyncio
async def test_a_form_whose_tool_call_id_holds_a_lone_surrogate_is_answered(
    relay: FakeRelay,
) -> None:
    async with BridgeClient(RelayTransport(relay.path)) as client:
        events = client.events()
        await relay.wait_connected()
        handle = relay.open_form(FORM, LONE)
        started = await events.next(timeout=T)
        assert isinstance(started, FlowStarted)
        flow = started.flow
        assert (flow.flow_id, flow.tool_call_id) == (SEEN, "x\ufffdy")
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        outcome = await client.respond(flow, answer, timeout=T)
        assert outcome.kind == "accepted"
    result = handle.result
    assert result is not None
    assert result.answers["deploy"].values == ["yes"]


@pytest.mark.asyncio
async def test_a_form_whose_tool_call_id_holds_a_lone_surrogate_is_replayed(
    relay: FakeRelay,
) -> None:
    relay.open_form(FORM, LONE)
    async with BridgeClient(RelayTransport(relay.path)) as client:
        assert list(client.open_flows) == [SEEN]


@pytest.mark.asyncio
async def test_a_raw_submit_whose_ids_hold_lone_surrogates_is_answered(
    relay: FakeRelay,
) -> None:
    async with BridgeClient(RelayTransport(relay.path)) as client:
        events = client.events()
        await relay.wait_connected()
        handle = relay.open_form(FORM, LONE)
        assert isinstance(await events.next(timeout=T), FlowStarted)
        response = AnswerResponse(answers={"deploy": RemoteAnswer(values=["no"])})
        # Pi's id as JavaScript holds it, sent as a \\ud800 escape; the host cleans its echo
        await client.transport.send(
            SubmitEvent(request_id="r\udc00", flow_id=f"tool:{LONE}", response=response)
        )
        completed = await events.next(timeout=T)
        assert isinstance(completed, FlowCompleted)
        assert completed.flow_id == SEEN
    assert handle.state == "completed"
    assert relay.received[-1]["data"]["requestId"] == "r\udc00"
