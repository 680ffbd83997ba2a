"""Item 4: FakeHost takes typed input and SDK responses; field-less wire Structs take no
arguments; the pi_ask_wire stubs keep option values and labels apart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_ask_core import CancelResponse, FlowHandle, QuestionTarget
from pi_ask_sdk.testing import FakeHost

if TYPE_CHECKING:
    from pi_ask_wire import AskOption, OptionValue, RemoteAnswer, StartedEvent


def untyped_params(host: FakeHost, form: dict[str, object]) -> None:
    host.open(form)  # type: ignore[arg-type]
    host.open({"questions": [{"id": "q", "prompt": "?", "options": [{"label": "Yes"}]}]})  # type: ignore[arg-type]
    host.open({"questions": [], "titel": "typo"})  # type: ignore[arg-type]


def raw_local_answer(host: FakeHost, handle: FlowHandle) -> None:
    host.answer(handle, {"kind": "cancel"})  # type: ignore[arg-type]


def fieldless_structs_take_no_arguments() -> None:
    CancelResponse("cancel")  # type: ignore[call-arg]
    QuestionTarget(kind="question")  # type: ignore[call-arg]


def wire_label_as_value(option: AskOption) -> RemoteAnswer:
    return {"values": [option["label"]]}  # type: ignore[list-item]


def wire_value_from_a_literal() -> RemoteAnswer:
    return {"values": ["yes"]}  # type: ignore[list-item]


def wire_label_compared_to_value(event: StartedEvent) -> OptionValue:
    option = event["questions"][0]["options"][0]
    value: OptionValue = option["label"]  # type: ignore[assignment]
    return value
