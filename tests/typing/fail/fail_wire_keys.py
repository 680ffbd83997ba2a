"""Wrong keys and values on the pi_ask_wire TypedDicts of the raw JSON payloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_ask_wire import (
        AnswerResponse,
        CancelResponse,
        StartedEvent,
        SubmitEvent,
        SubmitResultEvent,
    )


def snake_case_keys(event: StartedEvent) -> None:
    print(event["tool_call_id"])  # type: ignore[typeddict-item]
    print(event["flow_id"])  # type: ignore[typeddict-item]


def optional_key_read_as_present(event: StartedEvent) -> str:
    return event.get("toolCallId")  # type: ignore[return-value]


def labels_are_not_options(event: StartedEvent) -> None:
    print(event["questions"][0]["options"][0]["labels"])  # type: ignore[typeddict-item]


def submit_with_snake_case(flow_id: str) -> SubmitEvent:
    cancel: CancelResponse = {"kind": "cancel"}
    return {"version": 1, "request_id": "r1", "flowId": flow_id, "response": cancel}  # type: ignore[typeddict-unknown-key, typeddict-item]


def submit_missing_request_id(flow_id: str, response: AnswerResponse) -> SubmitEvent:
    return {"version": 1, "flowId": flow_id, "response": response}  # type: ignore[typeddict-item]


def wrong_version(flow_id: str, response: AnswerResponse) -> SubmitEvent:
    return {"version": 2, "requestId": "r", "flowId": flow_id, "response": response}  # type: ignore[typeddict-item]


def cancel_as_answer_kind() -> AnswerResponse:
    return {"kind": "cancel", "answers": {}}  # type: ignore[typeddict-item]


def labels_in_an_answer() -> AnswerResponse:
    return {"kind": "answer", "answers": {"deploy": {"labels": ["Yes"]}}}  # type: ignore[typeddict-unknown-key]


def error_without_narrowing(ack: SubmitResultEvent) -> str:
    return ack["error"]  # type: ignore[typeddict-item]
