"""A cancel can never pass for an answer, nor an answer be built that means cancel."""

from __future__ import annotations

from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    ApprovalMapping,
    Cancel,
    CancelFlow,
    FlowView,
    SelectOption,
)


def needs_answer(answer: Answer) -> int:
    return len(answer.answers)


def cancel_as_answer(flow: FlowView) -> None:
    needs_answer(Cancel.of(flow))  # type: ignore[arg-type]
    answer: Answer = Cancel(flow.flow_id)  # type: ignore[assignment]
    print(answer)


def answer_kind_cancel(flow: FlowView) -> None:
    Answer(flow.flow_id, (), kind="cancel")  # type: ignore[abstract, arg-type]
    Cancel(flow.flow_id, kind="answer")  # type: ignore[arg-type]


def button_response_taken_for_an_answer(flow: FlowView, button: str) -> None:
    deploy = flow.question("deploy")
    mapping = ApprovalMapping(
        flow, {"Approve": SelectOption(deploy.value("yes")), "Dismiss": CancelFlow()}
    )
    response = mapping.response(button)
    print(response.answers)  # type: ignore[union-attr]
    needs_answer(response)  # type: ignore[arg-type]


def builder_mode_is_not_a_cancel(flow: FlowView) -> None:
    AnswerBuilder(flow, mode="cancel")  # type: ignore[arg-type]
    AnswerBuilder(flow).select(flow.question("deploy").id).mode("cancel")  # type: ignore[arg-type]
