"""A synchronous bridge with its own buttons, declared as an explicit ApprovalMapping."""

from __future__ import annotations

from typing import Literal, TypeVar

from typing_extensions import assert_never, assert_type

from pi_ask_sdk import (
    Answer,
    ApprovalMapping,
    ButtonAction,
    Cancel,
    CancelFlow,
    FlowView,
    OptionValue,
    QuestionId,
    RespondOutcome,
    Response,
    SelectOption,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
    SyncBridgeClient,
    SyncClientStream,
)
from pi_ask_sdk.testing import FakeHost, yes_no_params

F = TypeVar("F")


def buttons(flow: FlowView[F]) -> ApprovalMapping[F]:
    """The buttons for one form, declared from its own values (a form without them raises)."""
    deploy = flow.question("deploy")
    return ApprovalMapping(
        flow,
        {
            "Approve": SelectOption(deploy.value("yes")),
            "Reject": SelectOption(deploy.value("no")),
            "Dismiss": CancelFlow(),
        },
    )


def button_text(action: ButtonAction) -> str:
    match action:
        case SelectOption(question_id=qid, value=value):
            assert_type(qid, QuestionId)
            assert_type(value, OptionValue)
            return f"{qid} = {value}"
        case CancelFlow():
            return "cancel"
        case _:
            assert_never(action)


def sent(response: Response) -> str:
    if isinstance(response, Cancel):
        assert_type(response.kind, Literal["cancel"])
        return "cancel"
    assert_type(response, Answer)
    return ", ".join(f"{qid}: {list(answer.values)}" for qid, answer in response.answers)


def main() -> None:
    host = FakeHost()
    with SyncBridgeClient(host.transport(), timeout=5) as client:
        assert_type(client, SyncBridgeClient)
        flows = client.flows()
        assert_type(flows, SyncClientStream[FlowView])
        host.open(yes_no_params("deploy"), tool_call_id="c1")
        flow = flows.next(timeout=1)
        bound = buttons(flow)
        assert_type(bound, ApprovalMapping)
        for name in bound.buttons:
            print(name, button_text(bound.action(name)))
        response = bound.response("Approve")
        assert_type(response, Answer | Cancel)
        print(sent(response))
        ticket = client.submit(flow, response)
        assert_type(ticket, SubmitTicket)
        outcome = client.await_result(ticket, timeout=5)
        assert_type(outcome, SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost)
        match outcome:
            case SubmitAccepted():
                print("approved", outcome.completion.result.answers)
            case SubmitRejected():
                print("refused", outcome.error, outcome.flow_still_open)
            case SubmitTimedOut() | SubmitLost():
                print("not confirmed: neither an answer nor a cancel", outcome.kind)
            case _:
                assert_never(outcome)
        host.open(yes_no_params("deploy"), tool_call_id="c2")
        second = flows.next(timeout=1)
        dismissed = buttons(second).response("Dismiss")
        assert_type(client.respond(second, dismissed, timeout=5), RespondOutcome)
        third_handle = host.open(yes_no_params("deploy"), tool_call_id="c3")
        third = flows.next(timeout=1)
        host.cancel(third_handle)  # the person in Pi got there first
        again = client.respond(third, buttons(third).response("Approve"), timeout=5)
        match again:
            case SubmitNotSent(reason=reason):
                print("nothing sent:", reason)
            case _:
                print(again.kind)


if __name__ == "__main__":
    main()
