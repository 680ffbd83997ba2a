"""A bridge that handles the raw JSON payloads as plain dicts, typed by the pi_ask_wire stubs.

``pi_ask_wire`` is stub-only, so it is imported for type checking alone.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal, cast

from typing_extensions import assert_never, assert_type

if TYPE_CHECKING:
    from pi_ask_wire import (
        AnswerResponse,
        AskQuestion,
        CancelResponse,
        CompletedEvent,
        Label,
        OptionValue,
        RemoteAnswer,
        StartedEvent,
        SubmitAck,
        SubmitEvent,
        SubmitRejection,
        SubmitResultEvent,
    )


def first_values(event: StartedEvent) -> dict[str, OptionValue]:
    """Question id -> the first option value (never a label)."""
    assert_type(event["version"], Literal[1])
    assert_type(event["createdAt"], int | float)
    questions: list[AskQuestion] = event["questions"]
    if "toolCallId" in event:
        assert_type(event["toolCallId"], str)
    assert_type(event.get("title"), str | None)
    for question in questions:
        for option in question["options"]:
            assert_type(option["value"], OptionValue)
            assert_type(option["label"], Label)
            print(f"{option['label']} = {option['value']}")  # both render as str
    return {q["id"]: q["options"][0]["value"] for q in questions if q["options"]}


def on_message(channel: str, raw: str) -> SubmitEvent | None:
    data: object = json.loads(raw)
    if channel == "pi-agent-ask:started" and isinstance(data, dict):
        started = cast("StartedEvent", data)
        picks = first_values(started)
        answers: dict[str, RemoteAnswer] = {qid: {"values": [v]} for qid, v in picks.items()}
        response: AnswerResponse = {"kind": "answer", "mode": "submit", "answers": answers}
        return {
            "version": 1,
            "requestId": f"bridge-{started['flowId']}",
            "flowId": started["flowId"],
            "response": response,
        }
    if channel == "pi-agent-ask:completed" and isinstance(data, dict):
        completed = cast("CompletedEvent", data)
        assert_type(completed["result"]["cancelled"], bool)
        for answer in completed["result"]["answers"].values():
            assert_type(answer["values"], list[str])  # option values, then any custom text
            print(", ".join(f"{label}" for label in answer["labels"]))  # labels render
    return None


def cancel(flow_id: str, request_id: str) -> SubmitEvent:
    response: CancelResponse = {"kind": "cancel"}
    return {"version": 1, "requestId": request_id, "flowId": flow_id, "response": response}


def verdict(ack: SubmitResultEvent) -> str:
    if ack["ok"] is True:
        assert_type(ack, SubmitAck)
        return "accepted"
    assert_type(ack, SubmitRejection)
    return f"{ack['error']}: {ack['message']}"


def response_kind(event: SubmitEvent) -> str:
    response = event["response"]
    if response["kind"] == "answer":
        assert_type(response, AnswerResponse)
        return f"answer to {sorted(response['answers'])}"
    elif response["kind"] == "cancel":
        assert_type(response, CancelResponse)
        return "cancel"
    else:
        assert_never(response)
