"""Item 2: option values and question ids come only from a started form; an Answer only from
AnswerBuilder. Minting them from plain strings is a type error."""

from __future__ import annotations

from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    ApprovalMapping,
    CancelFlow,
    FlowView,
    OptionValue,
    QuestionId,
    SelectOption,
)


def mint_values(flow: FlowView, typed: str) -> None:
    deploy = flow.question("deploy")
    AnswerBuilder(flow).select(deploy, OptionValue(typed))  # type: ignore[abstract]
    AnswerBuilder(flow).select(QuestionId("deploy"), deploy.value("no"))  # type: ignore[abstract]
    AnswerBuilder(flow).select(deploy, "yes")  # type: ignore[arg-type]
    AnswerBuilder(flow).select("deploy", deploy.value("no"))  # type: ignore[arg-type]
    AnswerBuilder(flow).option_note(deploy, "yes", "ok")  # type: ignore[arg-type]
    value: OptionValue = typed  # type: ignore[assignment]
    print(value)


def answer_without_the_builder(flow: FlowView) -> None:
    Answer(flow.flow_id, ())  # type: ignore[abstract]


def mapping_from_strings(flow: FlowView) -> None:
    SelectOption("yes")  # type: ignore[arg-type]
    SelectOption("deploy", "yes")  # type: ignore[call-arg, arg-type]
    ApprovalMapping(flow, {"Approve": "yes", "Dismiss": CancelFlow()})  # type: ignore[dict-item]


def mapping_is_read_only(bound: ApprovalMapping, other: FlowView) -> None:
    bound.flow = other  # type: ignore[misc]
    action = bound.action("Approve")
    if isinstance(action, SelectOption):
        action.value = other.question("deploy").value("no")  # type: ignore[misc]


def builder_argument_types(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    AnswerBuilder(flow).mode("approve")  # type: ignore[arg-type]
    AnswerBuilder(flow).custom_text(deploy, None)  # type: ignore[arg-type]
