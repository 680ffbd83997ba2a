"""Odd text in the ids that cross the wire: a tool call id or a submit's ids holding a lone
UTF-16 surrogate (legal in a JavaScript string) never stop the host emitting valid JSON, and
the form stays answerable (docs/protocol-decisions.md, "Text Python cannot encode")."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    FlowHost,
    StartedEvent,
    SubmitAck,
    SubmitRejection,
)
from tests.spec_examples import EXAMPLES

from .conftest import Recorder

FORM_A = EXAMPLES["forms"]["A"]["params"]


class _Text(str):
    """A str subclass (msgspec does not encode one as it is)."""


def submit(flow_id: str, request_id: str = "r") -> dict[str, Any]:
    response = {"kind": "answer", "answers": {"decision": {"values": ["yes"]}}}
    return {"version": 1, "requestId": request_id, "flowId": flow_id, "response": response}


@pytest.mark.parametrize(
    ("tool_call_id", "cleaned"),
    [
        ("x\ud800y", "x\ufffdy"),
        ("\udfff", "\ufffd"),
        ("a\ud83d\ude00b", "a\U0001f600b"),  # a pair kept as two code points: one character
        (_Text("call-A"), "call-A"),
    ],
)
def test_a_tool_call_id_that_is_not_valid_text_opens_a_form_that_encodes(
    host: FlowHost, recorder: Recorder, tool_call_id: str, cleaned: str
) -> None:
    flow = host.start(FORM_A, tool_call_id=tool_call_id)
    assert (flow.flow_id, flow.tool_call_id) == (f"tool:{cleaned}", cleaned)
    assert type(flow.flow_id) is str
    assert type(flow.tool_call_id) is str
    [(channel, started)] = recorder.take()
    assert channel == STARTED
    assert isinstance(started, dict)
    assert (started["flowId"], started["toolCallId"]) == (f"tool:{cleaned}", cleaned)
    event = flow.started_event()
    assert event is not None
    wire = msgspec.json.encode(event)  # raised UnicodeEncodeError before
    assert msgspec.json.decode(wire, type=StartedEvent).flow_id == f"tool:{cleaned}"


# (chr: ruff reads a lone surrogate escape as U+FFFD, and would call the two one case)
@pytest.mark.parametrize("named", [f"tool:x{chr(0xD800)}y", "tool:x\ufffdy"])
def test_a_submit_naming_the_id_as_given_or_as_emitted_answers_the_form(
    host: FlowHost, recorder: Recorder, named: str
) -> None:
    flow = host.start(FORM_A, tool_call_id="x\ud800y")
    recorder.take()
    assert host.get(named) is flow
    recorder.bus.emit(SUBMIT, submit(named))
    events = [(channel, data) for channel, data in recorder.take() if channel != SUBMIT]
    assert [channel for channel, _ in events] == [COMPLETED, SUBMIT_RESULT]
    completed, ack = events[0][1], events[1][1]
    assert isinstance(completed, dict)
    assert completed["flowId"] == "tool:x\ufffdy"
    assert completed["toolCallId"] == "x\ufffdy"
    assert ack == {"version": 1, "requestId": "r", "flowId": "tool:x\ufffdy", "ok": True}
    result = flow.result
    assert result is not None
    assert result.answers["decision"].values == ["yes"]


def test_a_request_id_holding_a_lone_surrogate_is_answered_with_its_clean_echo(
    host: FlowHost,
) -> None:
    flow = host.start(FORM_A, tool_call_id="x\ud800y")
    ack = host.resolve_submit(submit("tool:x\ud800y", request_id="r\udc00"))
    assert ack == SubmitAck(request_id="r\ufffd", flow_id="tool:x\ufffdy")
    msgspec.json.encode(ack)
    assert flow.state == "completed"


def test_a_lone_surrogate_flow_id_of_no_form_is_refused_with_a_typed_error(
    host: FlowHost,
) -> None:
    flow = host.start(FORM_A, tool_call_id="x\ud800y")
    ack = host.resolve_submit(submit("tool:z\ud800y", request_id="q\ud800"))
    assert type(ack) is SubmitRejection
    assert (ack.error, ack.request_id) == ("flow_not_found", "q\ufffd")
    assert ack.flow_id == "tool:z\ufffdy"
    msgspec.json.encode(ack)
    assert flow.is_open


def test_two_tool_call_ids_that_differ_only_in_lone_surrogates_name_one_flow(
    host: FlowHost,
) -> None:
    # Every lone surrogate is one U+FFFD: the later flow replaces the earlier one (spec §3.6).
    first = host.start(FORM_A, tool_call_id="x\ud800y")
    second = host.start(FORM_A, tool_call_id="x\udc00y")
    assert first.flow_id == second.flow_id == "tool:x\ufffdy"
    assert host.get("tool:x\ud800y") is second
