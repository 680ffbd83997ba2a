"""Ignoring that a submit can be rejected, and matches that forget a case."""

from __future__ import annotations

from typing_extensions import assert_never

from pi_ask_sdk import (
    BridgeClient,
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    SessionEnded,
    SubmitAccepted,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
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


def forgets_rejection(outcome: SubmitOutcome) -> str:
    match outcome:
        case SubmitAccepted():
            return "ok"
        case _:
            assert_never(outcome)  # type: ignore[arg-type]


def forgets_session_end(event: BridgeEvent) -> str:
    match event:
        case FlowStarted():
            return "started"
        case FlowCompleted():
            return "completed"
        case _:
            assert_never(event)  # type: ignore[arg-type]


def forgets_completion(event: BridgeEvent) -> str:
    if isinstance(event, FlowStarted):
        return "started"
    if isinstance(event, SessionEnded):
        return "ended"
    assert_never(event)  # type: ignore[arg-type]


def wrong_kind_tag(outcome: SubmitOutcome) -> str:
    if outcome.kind == "rejected":
        return outcome.message
    if outcome.kind == "refused":  # type: ignore[comparison-overlap]
        return "never"
    return "accepted"


def rejected_is_not_accepted(rejected: SubmitRejected) -> SubmitAccepted:
    return rejected  # type: ignore[return-value]
