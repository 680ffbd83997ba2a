"""Every example of the spec (§6) against the public API of pi_ask_core.

Compared exactly: codes, echoed ids, issue paths and result structures (including JavaScript key
order of ``answers``). Not compared: message texts (ours) and timestamps.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    FlowHandle,
    FlowHost,
    InvalidForm,
    LocalEventBus,
)
from pi_ask_core.forms import prepare_labels
from tests.spec_examples import EXAMPLES

from .conftest import Recorder

FLOW_ID_PATTERN = re.compile(r"flow:\d+:[0-9a-z]{6,}")
ACK_KEYS = {"version", "requestId", "flowId", "ok", "error", "message"}


def open_form(recorder: Recorder, name: str) -> tuple[FlowHost, FlowHandle]:
    spec = EXAMPLES["forms"][name]
    host = FlowHost(recorder.bus, present_single_as_multi=spec.get("presentSingleAsMulti", False))
    handle = host.start(spec["params"], tool_call_id=spec.get("toolCallId"))
    return host, handle


def key_order(value: Any) -> Any:
    """The nested key order of a JSON value, to compare JavaScript object order exactly."""
    if isinstance(value, dict):
        return [(k, key_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_order(v) for v in value]
    return None


@pytest.mark.parametrize("name", sorted(EXAMPLES["startedByForm"]))
def test_started_payload_matches_spec(recorder: Recorder, name: str) -> None:
    _, handle = open_form(recorder, name)
    [(channel, payload)] = recorder.take()
    assert channel == STARTED
    expected = dict(EXAMPLES["startedByForm"][name])
    assert isinstance(payload, dict)
    assert type(payload.pop("createdAt")) is int
    expected.pop("createdAt")
    if FLOW_ID_PATTERN.fullmatch(payload["flowId"]) and expected["flowId"].startswith("flow:"):
        expected["flowId"] = payload["flowId"]
    assert payload == expected
    assert key_order(payload) == key_order(expected)  # the reference key order
    assert handle.flow_id == payload["flowId"]


def own_instruction(result: Any, expected: Any) -> tuple[Any, Any]:
    """The elaboration instruction is our own wording: check it exists, then compare the rest."""
    if "elaboration" not in expected:
        return result, expected
    instruction = result["elaboration"]["instruction"]
    assert isinstance(instruction, str)
    assert len(instruction) > 40
    want = json.loads(json.dumps(expected))
    want["elaboration"]["instruction"] = instruction
    return result, want


def _example_ids() -> list[Any]:
    return [pytest.param(e, id=f"ex{e['id']:02d}") for e in EXAMPLES["examples"]]


@pytest.mark.parametrize("example", _example_ids())
def test_submit_example(recorder: Recorder, example: dict[str, Any]) -> None:
    host, handle = open_form(recorder, example["form"])
    recorder.take()
    questions_before = msgspec.to_builtins(handle.questions)
    for step in example["steps"]:
        request = json.loads(json.dumps(step["request"]))
        if isinstance(request, dict) and str(request.get("flowId", "")).startswith("flow:<"):
            request["flowId"] = handle.flow_id  # example 31: the random id is not reproducible
        recorder.bus.emit(SUBMIT, request)
        emitted = [(c, p) for c, p in recorder.take() if c != SUBMIT]
        assert [c for c, _ in emitted] == [e["channel"] for e in step["emitted"]]
        for (channel, payload), want in zip(emitted, step["emitted"], strict=True):
            assert isinstance(payload, dict)
            if channel == SUBMIT_RESULT:
                expected = {k: v for k, v in want["data"].items() if k in ACK_KEYS}
                if example["id"] == 31:
                    expected["flowId"] = handle.flow_id
                assert set(payload) == set(expected)  # never a leaked `state` key
                if payload["ok"] is False:
                    assert isinstance(payload["message"], str)
                    assert payload["message"].strip()
                    payload = {**payload, "message": expected["message"]}
                assert payload == expected
                assert list(payload) == list(expected)
            else:
                assert channel == COMPLETED
                result, expected_result = own_instruction(payload["result"], want["result"])
                assert result == expected_result
                assert key_order(result) == key_order(expected_result)
                assert payload["flowId"] == handle.flow_id
                assert payload["source"] == "tool"
                assert ("toolCallId" in payload) == (handle.tool_call_id is not None)
                assert type(payload["completedAt"]) is int
        if handle.is_open:
            # A refused submit leaves the form open and unchanged.
            assert host.get(handle.flow_id) is handle
            assert msgspec.to_builtins(handle.questions) == questions_before


@pytest.mark.parametrize("name", sorted(EXAMPLES["validations"]))
def test_validation_example(recorder: Recorder, name: str) -> None:
    case = EXAMPLES["validations"][name]
    host = FlowHost(recorder.bus)
    with pytest.raises(InvalidForm) as caught:
        host.start(case["raw"], tool_call_id="call-V")
    error = caught.value
    assert error.kind == "invalid_input"
    assert [i.path for i in error.issues] == [i["path"] for i in case["result"]["issues"]]
    assert error.result is not None
    result = msgspec.to_builtins(error.result)
    expected_result = {
        "cancelled": True,
        "mode": "submit",
        "questions": [],
        "answers": {},
        "error": {"kind": "invalid_input", "issues": msgspec.to_builtins(list(error.issues))},
    }
    if "title" in case["raw"]:
        expected_result = {"title": case["raw"]["title"], **expected_result}
    assert result == expected_result
    assert recorder.take() == []  # no flow, no event
    assert host.active_flows == ()
    prepared = prepare_labels(case["raw"])
    assert isinstance(prepared, dict)
    labels = [
        [option.get("label") for option in question["options"]]
        for question in prepared["questions"]
    ]
    assert labels == case["result"]["preparedLabels"]


def test_validation_messages_say_what_is_wrong() -> None:
    case = EXAMPLES["validations"]["V2"]
    with pytest.raises(InvalidForm) as caught:
        FlowHost(LocalEventBus()).start(case["raw"])
    messages = {i.path: i.message for i in caught.value.issues}
    assert "dup" in messages["questions[1].id"]
    assert "grid" in messages["questions[2].type"]
    assert "Invalid ask_user payload" in str(caught.value)
