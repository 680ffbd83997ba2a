"""An async bridge over FakeHost: the key results have the types a bridge relies on."""

from __future__ import annotations

import asyncio
from typing import TypeVar

from typing_extensions import assert_never, assert_type

from pi_ask_core import AskResult, CancelResponse
from pi_ask_core.protocol import QuestionTarget, SubmitErrorCode
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
    OptionValue,
    OptionView,
    QuestionId,
    QuestionView,
    RespondOutcome,
    Response,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
)
from pi_ask_sdk.errors import ConnectionLostReason
from pi_ask_sdk.outcomes import NotSentReason
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


F = TypeVar("F")  # one form: a handler generic in it cannot mix two forms


def choose(flow: FlowView[F]) -> Answer[F]:
    deploy = flow.question("deploy")
    assert_type(deploy, QuestionView[F])
    assert_type(deploy.id, QuestionId[F])
    assert_type(flow.flow_id, FlowId)
    no = deploy.value("no")
    assert_type(no, OptionValue[F])
    assert_type(no.question_id, QuestionId[F])
    assert_type(no.question_id.flow_id, FlowId)
    print(no == "no", no.upper(), f"{no}")  # a value is a str: compare, log, format it
    assert_type(deploy.option("yes"), OptionView[F])
    assert_type(deploy.values, tuple[OptionValue[F], ...])
    builder = AnswerBuilder(flow).select(deploy, no).note(deploy.id, "not on a Friday")
    assert_type(builder, AnswerBuilder[F])
    return builder.build()


def show(question: QuestionView) -> list[str]:
    """Display text renders with f-strings, str() or .render(), and is never a value."""
    assert_type(question.label, DisplayText)
    assert_type(question.prompt, DisplayText)
    lines = [f"{question.label}: {question.prompt.render()}"]
    for option in question.options:
        assert_type(option.badge, DisplayText | None)
        badge = "" if option.badge is None else f" ({option.badge})"
        lines.append(f"{option.position}. {option.label:<12}{badge} [{option.value}]")
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
            assert_type(reason, ConnectionLostReason)  # no "flow_completed": it was sent
            assert_type(ticket, SubmitTicket)
            return f"lost ({reason}) after sending {ticket.request_id}"
        case _:
            assert_never(outcome)


def describe_respond(outcome: RespondOutcome) -> str:
    """respond() adds the one case where nothing was sent."""
    match outcome:
        case SubmitNotSent(reason=reason):
            assert_type(reason, NotSentReason)
            return f"nothing sent ({reason})"
        case SubmitAccepted() | SubmitRejected() | SubmitTimedOut() | SubmitLost():
            return describe(outcome)
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
        assert_type(again, RespondOutcome)
        print(describe_respond(again))
        if isinstance(again, SubmitAccepted):
            assert_type(again.completion, FlowCompleted)
        third_handle = host.open(FORM, tool_call_id="c3")
        third = await flows.next(timeout=1)
        host.answer(third_handle, AnswerBuilder(third).build())  # the host's own user


if __name__ == "__main__":
    asyncio.run(main())
