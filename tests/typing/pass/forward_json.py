"""A bridge that forwards forms to a page as JSON and reads the page's answer back, written as
per-form handlers generic in the form's flow parameter; refusals matched on their narrow unions.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

from typing_extensions import assert_never, assert_type

from pi_ask_sdk import (
    AnswerBuilder,
    BridgeClient,
    FlowMismatch,
    FlowView,
    InvalidSelection,
    RespondOutcome,
    Response,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitRejected,
    SubmitTimedOut,
    flow_from_json,
    response_from_json,
    to_data,
    to_json,
)
from pi_ask_sdk.responses import UncheckedAnswer
from pi_ask_sdk.serialise import JsonObject
from pi_ask_sdk.testing import FakeHost, unchecked_answer, yes_no_params

if TYPE_CHECKING:
    from pi_ask_wire import SubmitEvent

F = TypeVar("F")


def page_answer(flow: FlowView[F]) -> str:
    """What a page would post back: the form's own value, in the submit's shape."""
    deploy = flow.question("deploy")
    return to_json(AnswerBuilder(flow).select(deploy, deploy.value("no")).build())


def read_back(flow: FlowView[F], posted: str) -> Response[F]:
    response = response_from_json(flow, posted)
    assert_type(response, Response[F])
    return response


def try_both(flow: FlowView[F]) -> str:
    deploy = flow.question("deploy")
    try:
        AnswerBuilder(flow).select(deploy, *deploy.values)
    except InvalidSelection as refused:
        match refused.problem:  # only the rules select() can break
            case "duplicate_value" | "too_many_values" | "value_with_custom_text":
                return refused.host_message
            case "unknown_value":
                return "the form was re-announced"
            case _:
                assert_never(refused.problem)
    return "accepted locally"


def summary(outcome: RespondOutcome) -> JsonObject:
    match outcome:
        case SubmitAccepted() | SubmitRejected() | SubmitTimedOut() | SubmitLost():
            return to_data(outcome)
        case SubmitNotSent():
            return to_data(outcome)
        case _:
            assert_never(outcome)


async def main() -> None:
    host = FakeHost()
    async with BridgeClient(host.transport()) as client:
        flows = client.flows()
        host.open(yes_no_params("deploy"), tool_call_id="c1")
        flow = await flows.next(timeout=5)
        page = to_json(flow)
        assert flow_from_json(page) == flow
        print(try_both(flow))
        response = read_back(flow, page_answer(flow))
        print(summary(await client.respond(flow, response, timeout=5)))
        sent: list[SubmitEvent] = host.submits
        assert_type(sent[0]["requestId"], str)

        host.open(yes_no_params("deploy"), tool_call_id="c2")
        second = await flows.next(timeout=5)
        try:
            read_back(second, page_answer(flow))  # the first form's answer
        except FlowMismatch as mismatch:
            print(mismatch.flow_id, mismatch.other_flow_id, mismatch.piece)
        by_label = unchecked_answer(second, {"deploy": ["Yes"]})
        assert_type(by_label, UncheckedAnswer)
        print(summary(await client.respond(second, by_label, timeout=5)))


if __name__ == "__main__":
    asyncio.run(main())
