"""An async bridge over FakeHost: the key results have the types a bridge relies on."""

from __future__ import annotations

import asyncio

from typing_extensions import assert_never, assert_type

from pi_ask_core import AskResult, SubmitErrorCode
from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    BridgeClient,
    BridgeEvent,
    Cancel,
    ClientStream,
    FlowCompleted,
    FlowId,
    FlowStarted,
    FlowView,
    OptionValue,
    OptionView,
    QuestionId,
    QuestionView,
    Response,
    SessionEnded,
    SubmitAccepted,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
)
from pi_ask_sdk.testing import FakeHost, yes_no_params


def choose(flow: FlowView) -> Answer:
    deploy = flow.question("deploy")
    assert_type(deploy, QuestionView)
    assert_type(deploy.id, QuestionId)
    assert_type(flow.flow_id, FlowId)
    no = deploy.value("no")
    assert_type(no, OptionValue)
    assert_type(deploy.option("yes"), OptionView)
    assert_type(deploy.values, tuple[OptionValue, ...])
    builder = AnswerBuilder(flow).select(deploy, no).note(deploy.id, "not on a Friday")
    assert_type(builder, AnswerBuilder)
    return builder.build()


def describe(outcome: SubmitOutcome) -> str:
    match outcome:
        case SubmitAccepted(completion=completion):
            assert_type(completion, FlowCompleted | None)
            if completion is None:
                return "accepted; the completion is still to come"
            return f"accepted, cancelled={completion.result.cancelled}"
        case SubmitRejected(error=error, message=message):
            assert_type(error, SubmitErrorCode)
            return f"rejected ({error}): {message}"
        case _:
            assert_never(outcome)


def describe_by_kind(outcome: SubmitAccepted | SubmitRejected) -> bool:
    if outcome.kind == "accepted":
        assert_type(outcome, SubmitAccepted)
        return True
    assert_type(outcome, SubmitRejected)
    return outcome.flow_still_open


def on_event(event: BridgeEvent) -> str:
    match event:
        case FlowStarted(flow=flow):
            return f"started {flow.flow_id} ({len(flow.questions)} questions)"
        case FlowCompleted(flow_id=flow_id, result=result):
            assert_type(result, AskResult)
            return f"completed {flow_id}"
        case SessionEnded(reason=reason):
            return f"session over: {reason}"
        case _:
            assert_never(event)


async def main() -> None:
    host = FakeHost()
    async with BridgeClient(host.transport()) as client:
        assert_type(client, BridgeClient)
        flows = client.flows()
        assert_type(flows, ClientStream[FlowView])
        events = client.events()
        assert_type(events, ClientStream[BridgeEvent])
        host.open(yes_no_params("deploy"), tool_call_id="c1")
        flow = await flows.next(timeout=1)
        assert_type(flow, FlowView)
        ticket = await client.submit(flow, choose(flow))
        assert_type(ticket, SubmitTicket)
        outcome = await client.await_result(ticket, timeout=5)
        assert_type(outcome, SubmitAccepted | SubmitRejected)
        print(describe(outcome), describe_by_kind(outcome))
        async for event in events:
            print(on_event(event))
            if isinstance(event, FlowCompleted):
                break

        host.open(yes_no_params("deploy"), tool_call_id="c2")
        second = await flows.next(timeout=1)
        response: Response = Cancel.of(second)
        assert_type(response, Answer | Cancel)
        again = await client.respond(second, response, timeout=5)
        assert_type(again, SubmitOutcome)
        if isinstance(again, SubmitRejected):
            print(again.error)
        else:
            assert_type(again, SubmitAccepted)
            assert_type(again.completion, FlowCompleted | None)


if __name__ == "__main__":
    asyncio.run(main())
