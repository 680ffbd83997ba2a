"""Item 2: the pieces of one form stay with that form. In a per-flow handler generic in the
form's flow parameter, a question, value, option, answer, cancel or button of another form is a
type error (at run time each is refused with ``FlowMismatch`` before anything is sent)."""

from __future__ import annotations

from typing import TypeVar

from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    ApprovalMapping,
    BridgeClient,
    Cancel,
    CancelFlow,
    FlowView,
    OptionValue,
    Response,
    SelectOption,
    SyncBridgeClient,
)

F = TypeVar("F")
G = TypeVar("G")


def mixes_two_forms(flow: FlowView[F], earlier: FlowView[G]) -> Answer[F]:
    deploy = flow.question("deploy")
    old = earlier.question("deploy")
    AnswerBuilder(flow).select(deploy, old.value("yes"))  # type: ignore[arg-type]
    AnswerBuilder(flow).select(old, deploy.value("yes"))  # type: ignore[arg-type]
    AnswerBuilder(flow).select(old.id)  # type: ignore[arg-type]
    AnswerBuilder(flow).option_note(deploy, old.option("yes"), "why")  # type: ignore[arg-type]
    return AnswerBuilder(earlier).build()  # type: ignore[return-value]


def kept_from_an_earlier_form(flow: FlowView[F], kept: OptionValue) -> Answer[F]:
    deploy = flow.question("deploy")
    return AnswerBuilder(flow).select(deploy, kept).build()  # type: ignore[arg-type]


def cancels_another_form(flow: FlowView[F], earlier: FlowView[G]) -> Response[F]:
    cancel: Cancel[F] = Cancel.of(earlier)  # type: ignore[arg-type]
    return cancel


def buttons_of_another_form(flow: FlowView[F], earlier: FlowView[G]) -> ApprovalMapping[F]:
    old = earlier.question("deploy")
    return ApprovalMapping(flow, {"Approve": SelectOption(old.value("yes")), "No": CancelFlow()})  # type: ignore[arg-type]


async def submits_another_forms_answer(
    client: BridgeClient, flow: FlowView[F], answer: Answer[G]
) -> None:
    await client.submit(flow, answer)  # type: ignore[misc]
    await client.respond(flow, answer)  # type: ignore[misc]


def sync_submits_another_forms_answer(
    client: SyncBridgeClient, flow: FlowView[F], answer: Answer[G]
) -> None:
    client.submit(flow, answer)  # type: ignore[misc]
