"""Small builders shared by the SDK tests."""

from __future__ import annotations

import msgspec

from pi_ask_core import STARTED, StartedEvent
from pi_ask_sdk import BridgeClient, FlowId, FlowView, SubmitRejected
from pi_ask_sdk.testing import AskParams, FakeHost, unchecked_answer, yes_no_params


def view_of(params: AskParams, *, tool_call_id: str = "call-1") -> FlowView:
    """The ``FlowView`` a bridge would get for ``params`` (via a real host's started event)."""
    host = FakeHost()
    host.open(params, tool_call_id=tool_call_id)
    started = host.recorded(STARTED)[-1]
    return FlowView.from_started(msgspec.convert(started, StartedEvent))


def started_payload(flow_id: str = "tool:x", question_id: str = "deploy") -> dict[str, object]:
    """A well-formed ``started`` payload as decoded JSON."""
    return {
        "version": 1,
        "flowId": flow_id,
        "toolCallId": flow_id.removeprefix("tool:"),
        "source": "tool",
        "questions": [
            {
                "id": question_id,
                "label": "Deploy",
                "prompt": "Deploy?",
                "type": "single",
                "required": False,
                "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
            }
        ],
        "createdAt": 1,
    }


def completed_payload(flow_id: str = "tool:x") -> dict[str, object]:
    return {
        "version": 1,
        "flowId": flow_id,
        "source": "tool",
        "result": {"cancelled": True, "mode": "submit", "questions": [], "answers": {}},
        "completedAt": 2,
    }


def ack_payload(request_id: str, flow_id: str, *, ok: bool = True) -> dict[str, object]:
    if ok:
        return {"version": 1, "requestId": request_id, "flowId": flow_id, "ok": True}
    return {
        "version": 1,
        "requestId": request_id,
        "flowId": flow_id,
        "ok": False,
        "error": "invalid_answer",
        "message": "nope",
    }


async def refused_by_label(
    host: FakeHost, client: BridgeClient, tool_call_id: str
) -> SubmitRejected:
    """Open a yes/no form and submit a label as its value past the builder's checks: the host
    refuses it (``invalid_answer``)."""
    host.open(yes_no_params("deploy"), tool_call_id=tool_call_id)
    flow = client.open_flows[FlowId(f"tool:{tool_call_id}")]  # an in-process host: open now
    ticket = await client.submit(flow, unchecked_answer(flow, {"deploy": ["Yes"]}))
    outcome = await client.await_result(ticket, timeout=2.0)
    assert isinstance(outcome, SubmitRejected)
    return outcome
