"""Odd text in ids, end to end through the in-process transport: a tool call id holding a lone
UTF-16 surrogate opens a form a ``BridgeClient`` sees, can write as JSON and answers; a submit
naming the id as given is answered too, and a lone surrogate request id is refused by type."""

from __future__ import annotations

import json

import msgspec
import pytest

from pi_ask_core import SUBMIT_RESULT, AnswerResponse, RemoteAnswer, SubmitEvent
from pi_ask_sdk import AnswerBuilder, FlowId, FlowStarted, SubmitAccepted, to_json
from pi_ask_sdk.errors import InvalidRequestId
from pi_ask_sdk.testing import FakeHost, yes_no_params

from .conftest import TIMEOUT

LONE = "x\ud800y"
SEEN = FlowId("tool:x\ufffdy")


@pytest.mark.asyncio
async def test_a_form_whose_tool_call_id_holds_a_lone_surrogate_is_answered(
    fake: FakeHost,
) -> None:
    async with fake.client() as client:
        events = client.events()
        handle = fake.open(yes_no_params("deploy"), tool_call_id=LONE)
        started = await events.next(timeout=TIMEOUT)
        assert isinstance(started, FlowStarted)
        flow = started.flow
        assert (flow.flow_id, flow.tool_call_id) == (SEEN, "x\ufffdy")
        assert json.loads(to_json(flow))["flowId"] == SEEN
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        ticket = await client.submit(flow, answer)
        assert isinstance(await client.await_result(ticket, timeout=TIMEOUT), SubmitAccepted)
        result = handle.result
        assert result is not None
        assert result.answers["deploy"].values == ["yes"]
        # what the host recorded (as a peer on the wire sees it) encodes as JSON
        msgspec.json.encode(fake.recorded(SUBMIT_RESULT))


@pytest.mark.asyncio
async def test_a_raw_submit_naming_the_id_as_given_is_answered(fake: FakeHost) -> None:
    async with fake.client() as client:
        handle = fake.open(yes_no_params("deploy"), tool_call_id=LONE)
        assert client.open_flows[SEEN].tool_call_id == "x\ufffdy"
        response = AnswerResponse(answers={"deploy": RemoteAnswer(values=["no"])})
        # a peer that kept Pi's id as JavaScript holds it, and a request id likewise
        await client.transport.send(
            SubmitEvent(request_id="raw\udc00", flow_id=f"tool:{LONE}", response=response)
        )
        assert handle.state == "completed"
        [ack] = fake.recorded(SUBMIT_RESULT)
        assert ack == {"version": 1, "requestId": "raw\ufffd", "flowId": SEEN, "ok": True}


@pytest.mark.asyncio
async def test_a_lone_surrogate_request_id_is_refused_by_type_and_the_form_stays_open(
    fake: FakeHost,
) -> None:
    async with fake.client() as client:
        handle = fake.open(yes_no_params("deploy"), tool_call_id=LONE)
        flow = client.open_flows[SEEN]
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        with pytest.raises(InvalidRequestId, match="lone surrogate"):
            await client.submit(flow, answer, request_id="r\ud800")
        assert handle.is_open
        ticket = await client.submit(flow, answer, request_id="r-1")
        assert isinstance(await client.await_result(ticket, timeout=TIMEOUT), SubmitAccepted)
