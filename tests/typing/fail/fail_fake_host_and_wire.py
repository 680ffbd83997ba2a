"""FakeHost takes typed input and SDK responses, and its records are typed (item 9); the unchecked
answer is no Answer (item 5); field-less wire Structs take no arguments; the pi_ask_wire stubs
keep option values and labels apart, and a label is no str (item 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_ask_core import CancelResponse, FlowHandle
from pi_ask_core.protocol import QuestionTarget
from pi_ask_sdk import Answer, FlowView
from pi_ask_sdk.testing import FakeHost, unchecked_answer

if TYPE_CHECKING:
    from pi_ask_wire import AskOption, CompletedEvent, OptionValue, RemoteAnswer, StartedEvent


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


def wire_label_used_as_text(event: StartedEvent) -> str:
    """Item 7: a label is display text in the stubs too, not a str that passes anywhere."""
    option = event["questions"][0]["options"][0]
    if option["label"] == "Yes":  # type: ignore[comparison-overlap]
        print("chose by label")  # type: ignore[unreachable]
    text: str = option["label"]  # type: ignore[assignment]
    return text


def result_values_are_not_option_values(completed: CompletedEvent) -> OptionValue:
    """Item 7: a result's values end with the custom text, which is no option value."""
    return completed["result"]["answers"]["deploy"]["values"][-1]  # type: ignore[return-value]


def records_are_typed(host: FakeHost) -> str:
    """Item 9: FakeHost's records are the wire's TypedDicts."""
    print(host.submits[0]["request_id"])  # type: ignore[typeddict-item]
    return host.submits[0]["requestId"]


def unchecked_is_not_an_answer(flow: FlowView) -> Answer:
    """Item 5: the unchecked path says so in its type."""
    return unchecked_answer(flow, {"deploy": ["Yes"]})  # type: ignore[return-value]
