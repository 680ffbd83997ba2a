"""Odd text in ids through the fleet: a form whose tool call id holds a lone UTF-16 surrogate
(a flow id becomes a subject token) reaches a bridge over NATS and is answered; a raw submit
whose ids hold lone surrogates is answered too. Nothing crashes the forwarder."""

from __future__ import annotations

import pytest

from pi_ask_core import AnswerResponse, RemoteAnswer, SubmitEvent
from pi_ask_sdk import BridgeClient, FlowCompleted, FlowId, SubmitAccepted
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.fleet.protocol import flow_token
from pi_ask_sdk.testing import yes_no_params

from .conftest import Host
from .kit import yes

LONE = "x\ud800y"
SEEN = FlowId("tool:x\ufffdy")


@pytest.mark.asyncio
async def test_a_form_whose_tool_call_id_holds_a_lone_surrogate_is_answered(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flows = client.flows()
        handle = relay.open_form(yes_no_params(), LONE)
        flow = await flows.next(timeout=10)
        assert (flow.flow_id, flow.tool_call_id) == (SEEN, "x\ufffdy")
        # the subject token is the emitted (valid) id's, whoever names it
        assert flow_token(SEEN) == flow_token(handle.flow_id)
        assert isinstance(await client.respond(flow, yes(flow), timeout=10), SubmitAccepted)
    assert handle.state == "completed"


@pytest.mark.asyncio
async def test_a_raw_submit_whose_ids_hold_lone_surrogates_is_answered(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        events = client.events()
        handle = relay.open_form(yes_no_params(), LONE)
        await events.next(timeout=10)  # started
        response = AnswerResponse(answers={"deploy": RemoteAnswer(values=["yes"])})
        await client.transport.send(
            SubmitEvent(request_id="r\udc00", flow_id=f"tool:{LONE}", response=response)
        )
        completed = await events.next(timeout=10)
        assert isinstance(completed, FlowCompleted)
        assert completed.flow_id == SEEN
    assert handle.state == "completed"
