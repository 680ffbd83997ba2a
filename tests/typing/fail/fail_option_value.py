"""A label, or any plain str, where an option value or a question id is required."""

from __future__ import annotations

from pi_ask_sdk import AnswerBuilder, FlowView, OptionValue, OptionView, QuestionId


def by_label(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    yes = deploy.option("yes")
    AnswerBuilder(flow).select(deploy, "Yes")  # type: ignore[arg-type]
    AnswerBuilder(flow).select(deploy, yes.label)  # type: ignore[arg-type]
    AnswerBuilder(flow).option_note(deploy, "yes", "ok")  # type: ignore[arg-type]
    AnswerBuilder(flow).select(deploy, yes, yes.value)  # fine: an OptionView and an OptionValue


def plain_str_as_value(label: str) -> OptionValue:
    return label  # type: ignore[return-value]


def label_as_value(option: OptionView) -> None:
    value: OptionValue = option.label  # type: ignore[assignment]
    print(value)


def plain_str_as_question_id(flow: FlowView, qid: str) -> None:
    AnswerBuilder(flow).select("deploy", OptionValue("yes"))  # type: ignore[arg-type]
    AnswerBuilder(flow).custom_text(qid, "later")  # type: ignore[arg-type]
    question: QuestionId = qid  # type: ignore[assignment]
    AnswerBuilder(flow).note(question, "fine: a QuestionId")
