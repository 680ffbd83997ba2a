"""A synchronous bridge with its own buttons, declared as an explicit ApprovalMapping."""

from __future__ import annotations

from typing import Literal

from typing_extensions import assert_never, assert_type

from pi_ask_sdk import (
    Answer,
    ApprovalMapping,
    BoundApproval,
    ButtonAction,
    Cancel,
    CancelFlow,
    FlowView,
    Response,
    SelectOption,
    SubmitAccepted,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SyncBridgeClient,
    SyncClientStream,
)
from pi_ask_sdk.testing import FakeHost, yes_no_params

BUTTONS = ApprovalMapping(
    {
        "Approve": SelectOption("deploy", "yes"),
        "Reject": SelectOption("deploy", "no"),
        "Dismiss": CancelFlow(),
    }
)


def button_text(action: ButtonAction) -> str:
    match action:
        case SelectOption(question_id=qid, value=value):
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
        bound = BUTTONS.bind(flow)
        assert_type(bound, BoundApproval)
        for button, action in BUTTONS:
            print(button, button_text(action))
        response = bound.response("Approve")
        assert_type(response, Answer | Cancel)
        print(sent(response))
        ticket = client.submit(flow, response)
        assert_type(ticket, SubmitTicket)
        outcome = client.await_result(ticket, timeout=5)
        assert_type(outcome, SubmitAccepted | SubmitRejected)
        match outcome:
            case SubmitAccepted():
                print("approved", outcome.completion)
            case SubmitRejected():
                print("refused", outcome.error, outcome.flow_still_open)
            case _:
                assert_never(outcome)
        host.open(yes_no_params("deploy"), tool_call_id="c2")
        second = flows.next(timeout=1)
        dismissed = BUTTONS.bind(second).response("Dismiss")
        assert_type(client.respond(second, dismissed, timeout=5), SubmitOutcome)


if __name__ == "__main__":
    main()
