"""Item 3: every outcome of a submit is a value; a match that forgets one does not type-check."""

from __future__ import annotations

from typing_extensions import assert_never

from pi_ask_sdk import (
    AnswerBuilder,
    BridgeClient,
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    FlowView,
    RespondOutcome,
    Response,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
    SyncBridgeClient,
)


async def completion_without_narrowing(client: BridgeClient, ticket: SubmitTicket) -> None:
    outcome = await client.await_result(ticket)
    print(outcome.completion)  # type: ignore[union-attr]
    print(outcome.error)  # type: ignore[union-attr]
    accepted: SubmitAccepted = outcome  # type: ignore[assignment]
    print(accepted)


def sync_completion_without_narrowing(client: SyncBridgeClient, ticket: SubmitTicket) -> None:
    print(client.await_result(ticket, timeout=1).completion)  # type: ignore[union-attr]


def forgets_timeouts_and_lost_connections(outcome: SubmitOutcome) -> str:
    match outcome:
        case SubmitAccepted():
            return "ok"
        case SubmitRejected():
            return "refused"
        case _:
            assert_never(outcome)  # type: ignore[arg-type]


def forgets_lost(outcome: SubmitOutcome) -> str:
    match outcome.kind:
        case "accepted" | "rejected" | "timed_out":
            return outcome.kind
        case _:
            assert_never(outcome.kind)  # type: ignore[arg-type]


def treats_everything_else_as_a_rejection(outcome: SubmitOutcome) -> str:
    if outcome.kind == "accepted":
        return "ok"
    return str(outcome.message)  # type: ignore[union-attr]


async def respond_is_not_two_outcomes(client: BridgeClient, flow: FlowView, r: Response) -> None:
    outcome: SubmitAccepted | SubmitRejected = await client.respond(flow, r)  # type: ignore[assignment]
    print(outcome)
    # respond may send nothing: its outcome is not a sent submit's
    sent: SubmitOutcome = await client.respond(flow, r)  # type: ignore[assignment]
    print(sent)


def not_sent_has_no_ticket(
    not_sent: SubmitNotSent, lost: SubmitLost, timed_out: SubmitTimedOut
) -> SubmitTicket:
    print(timed_out.ticket.request_id, lost.ticket.request_id)  # fine: both were sent
    print(not_sent.ticket)  # type: ignore[attr-defined]
    return lost.ticket


def forgets_that_respond_may_send_nothing(outcome: RespondOutcome) -> str:
    match outcome:
        case SubmitAccepted() | SubmitRejected() | SubmitTimedOut() | SubmitLost():
            return outcome.kind
        case _:
            assert_never(outcome)  # type: ignore[arg-type]


def outcome_as_a_bool(outcome: SubmitOutcome) -> None:
    """An outcome has no truth value: every case would pass for "it worked"."""
    if outcome:  # type: ignore[truthy-bool]
        print("sent?")
    assert outcome  # type: ignore[truthy-bool]
    failed = not outcome  # type: ignore[truthy-bool]
    print(failed)


async def respond_as_a_bool(client: BridgeClient, flow: FlowView) -> None:
    if await client.respond(flow, AnswerBuilder(flow).build()):  # type: ignore[truthy-bool]
        print("answered?")
    while not await client.respond(flow, AnswerBuilder(flow).build()):  # type: ignore[truthy-bool]
        print("retry?")  # type: ignore[unreachable]


def forgets_session_end(event: BridgeEvent) -> str:
    match event:
        case FlowStarted():
            return "started"
        case FlowCompleted():
            return "completed"
        case _:
            assert_never(event)  # type: ignore[arg-type]


def parses_the_hosts_message(refused: SubmitRejected) -> None:
    """Issue 27: the message is display text, like a label; the code is the contract."""
    text: str = refused.message  # type: ignore[assignment]
    print(text, f"refused: {refused.message}", refused.message.render())  # fine: shown
    print(refused.message == "Unknown option value")  # type: ignore[comparison-overlap]
    print(refused.message.startswith("Unknown"))  # type: ignore[attr-defined]
