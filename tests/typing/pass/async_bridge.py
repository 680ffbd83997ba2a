"""An async bridge over FakeHost: the key results have the types a bridge relies on."""

from __future__ import annotations

import asyncio

from typing_extensions import assert_never, assert_type

from pi_ask_core import AskResult, CancelResponse, QuestionTarget, SubmitErrorCode
from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    BridgeClient,
    BridgeEvent,
    Cancel,
    ClientStream,
    DisplayText,
    FlowCompleted,
    FlowId,
    FlowStarted,
    FlowView,
    LostReason,
    OptionValue,
    OptionView,
    QuestionId,
    QuestionView,
    Response,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
)
from pi_ask_sdk.testing import AskParams, FakeHost, yes_no_params

FORM: AskParams = {
    "title": "Release",
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [{"value": "yes", "label": "Ship it", "recommended": True}],
        }
    ],
}


def choose(flow: FlowView) -> Answer:
    deploy = flow.question("deploy")
    assert_type(deploy, QuestionView)
    assert_type(deploy.id, QuestionId)
    assert_type(flow.flow_id, FlowId)
    no = deploy.value("no")
    assert_type(no, OptionValue)
    assert_type(no.question_id, QuestionId)
    print(no == "no", no.upper(), f"{no}")  # a value is a str: compare, log, format it
    assert_type(deploy.option("yes"), OptionView)
    assert_type(deploy.values, tuple[OptionValue, ...])
    builder = AnswerBuilder(flow).select(deploy, no).note(deploy.id, "not on a Friday")
    assert_type(builder, AnswerBuilder)
    return builder.build()


def show(question: QuestionView) -> list[str]:
    """Display text renders with str() / .text / f-strings, and is never a value."""
    assert_type(question.label, DisplayText)
    assert_type(question.prompt, DisplayText)
    lines = [f"{question.label}: {question.prompt.text}"]
    for option in question.options:
        assert_type(option.recommended, DisplayText | None)
        marker = f" ({option.recommended})" if option.recommended else ""
        lines.append(f"{option.position}. {option.label:<12}{marker} [{option.value}]")
    return lines


def describe(outcome: SubmitOutcome) -> str:
    match outcome:
        case SubmitAccepted(completion=completion):
            assert_type(completion, FlowCompleted)  # no None to guess about
            return f"accepted, cancelled={completion.result.cancelled}"
        case SubmitRejected(error=error, message=message):
            assert_type(error, SubmitErrorCode)
            return f"rejected ({error}): {message}"
        case SubmitTimedOut(timeout=timeout, acknowledged=acknowledged):
            return f"no outcome within {timeout} s (acknowledged: {acknowledged}); fate unknown"
        case SubmitLost(reason=reason, ticket=ticket):
            assert_type(reason, LostReason)
            assert_type(ticket, SubmitTicket | None)
            return f"lost ({reason}); sent: {outcome.sent}"
        case _:
            assert_never(outcome)


def describe_by_kind(outcome: SubmitOutcome) -> bool:
    """The same, by the ``kind`` tag."""
    if outcome.kind == "accepted":
        assert_type(outcome, SubmitAccepted)
        return True
    if outcome.kind == "rejected":
        assert_type(outcome, SubmitRejected)
        return outcome.flow_still_open
    if outcome.kind == "timed_out":
        assert_type(outcome, SubmitTimedOut)
        return True
    assert_type(outcome, SubmitLost)
    return False


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
    print(CancelResponse(), QuestionTarget())  # field-less wire Structs take no arguments
    async with BridgeClient(host.transport()) as client:
        assert_type(client, BridgeClient)
        flows = client.flows()
        assert_type(flows, ClientStream[FlowView])
        events = client.events()
        assert_type(events, ClientStream[BridgeEvent])
        host.open(yes_no_params("deploy"), tool_call_id="c1")
        flow = await flows.next(timeout=1)
        assert_type(flow, FlowView)
        assert_type(flow.title, DisplayText | None)
        print("\n".join(show(flow.question("deploy"))))
        ticket = await client.submit(flow, choose(flow))
        assert_type(ticket, SubmitTicket)
        outcome = await client.await_result(ticket, timeout=5)
        assert_type(outcome, SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost)
        print(describe(outcome), describe_by_kind(outcome))
        async for event in events:
            print(on_event(event))
            if isinstance(event, FlowCompleted):
                break

        host.open(FORM, tool_call_id="c2")
        second = await flows.next(timeout=1)
        response: Response = Cancel.of(second)
        assert_type(response, Answer | Cancel)
        again = await client.respond(second, response, timeout=5)
        assert_type(again, SubmitOutcome)
        if isinstance(again, SubmitAccepted):
            assert_type(again.completion, FlowCompleted)
        third_handle = host.open(FORM, tool_call_id="c3")
        third = await flows.next(timeout=1)
        host.answer(third_handle, AnswerBuilder(third).build())  # the host's own user


if __name__ == "__main__":
    asyncio.run(main())
