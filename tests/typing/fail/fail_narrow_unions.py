"""Item 4: each path's union holds only the cases that can happen there. A builder call's error
lists only the rules that call can break, and a sent submit's loss cannot be "flow_completed":
a ``match`` arm for anything else is unreachable (mypy ``warn_unreachable``)."""

from __future__ import annotations

from pi_ask_sdk import (
    AnswerBuilder,
    FlowView,
    InvalidCustomText,
    InvalidSelection,
    SubmitLost,
    SubmitNotSent,
)
from pi_ask_sdk.errors import CustomTextProblem


def select_rules(flow: FlowView) -> str:
    deploy = flow.question("deploy")
    try:
        AnswerBuilder(flow).select(deploy, *deploy.values)
    except InvalidSelection as refused:
        match refused.problem:
            case "duplicate_value" | "too_many_values" | "value_with_custom_text":
                return refused.host_message
            case "unknown_value":
                return "re-announced form"
            case "unknown_option_note":
                return "select() never breaks this rule"  # type: ignore[unreachable]
    return "ok"


def custom_text_rule(flow: FlowView, refused: InvalidSelection) -> CustomTextProblem:
    problem: CustomTextProblem = refused.problem  # type: ignore[assignment]
    return problem


def custom_text_only(refused: InvalidCustomText) -> str:
    if refused.problem == "too_many_values":  # type: ignore[comparison-overlap]
        return "custom_text() never breaks this rule"  # type: ignore[unreachable]
    return refused.problem


def lost_after_sending(lost: SubmitLost) -> str:
    if lost.reason == "flow_completed":  # type: ignore[comparison-overlap]
        return "a sent submit is lost with its session or connection, never this way"  # type: ignore[unreachable]
    return lost.reason


def not_sent_has_no_ticket(not_sent: SubmitNotSent) -> str:
    print(not_sent.ticket)  # type: ignore[attr-defined]
    return not_sent.reason
