"""What a bridge gets back: submit tickets and outcomes, and the events of the client stream.

Both are tagged unions (``kind``), so a ``match`` or ``isinstance`` chain is exhaustive under
mypy: ``SubmitOutcome = SubmitAccepted | SubmitRejected`` and
``BridgeEvent = FlowStarted | FlowCompleted | SessionEnded``.
"""

from __future__ import annotations

import asyncio
from typing import Literal, TypeAlias, final

import msgspec

from pi_ask_core import AskResult, FlowSource, SubmitErrorCode, SubmitResultEvent

from .errors import ConnectionLostReason
from .forms import FlowId, FlowView

__all__ = [
    "BridgeEvent",
    "FlowCompleted",
    "FlowStarted",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitOutcome",
    "SubmitRejected",
    "SubmitTicket",
]


@final
class FlowStarted(msgspec.Struct, frozen=True):
    """A form opened (or, with ``flow.replay``, was already open when the client connected)."""

    flow: FlowView
    kind: Literal["started"] = "started"


@final
class FlowCompleted(msgspec.Struct, frozen=True):
    """A form resolved: answered, elaborated or cancelled (``result.cancelled``).

    ``flow`` is the started form when this client saw it; ``None`` when ``completed`` arrived
    without a prior ``started`` (spec A4), e.g. for a flow completed before it was announced.
    """

    flow_id: FlowId
    tool_call_id: str | None
    source: FlowSource
    result: AskResult
    completed_at: float
    flow: FlowView | None = None
    kind: Literal["completed"] = "completed"


@final
class SessionEnded(msgspec.Struct, frozen=True):
    """The Pi session ended or the connection dropped: every open flow is gone, without
    ``completed``. After ``disconnected`` the client's streams end."""

    reason: Literal["session_ended", "disconnected"]
    kind: Literal["session_ended"] = "session_ended"


BridgeEvent: TypeAlias = FlowStarted | FlowCompleted | SessionEnded


class PendingSubmit:
    """Internal: the waiter a ``SubmitTicket`` refers to (armed before the submit is sent)."""

    __slots__ = ("completion", "flow", "flow_id", "future", "owner", "request_id")

    def __init__(
        self,
        owner: object,
        request_id: str,
        flow_id: FlowId,
        future: asyncio.Future[SubmitResultEvent | ConnectionLostReason],
    ) -> None:
        self.owner = owner
        self.request_id = request_id
        self.flow_id = flow_id
        self.future = future
        self.completion: FlowCompleted | None = None

    def __repr__(self) -> str:
        state = "done" if self.future.done() else "waiting"
        return f"<PendingSubmit {self.request_id!r} {state}>"
        self.flow: FlowView | None = None  # the open form, kept from acceptance to completion


@final
class SubmitTicket(msgspec.Struct, frozen=True):
    """Proof that a submit was sent; pass it to ``BridgeClient.await_result``."""

    request_id: str
    flow_id: FlowId
    response_kind: Literal["answer", "cancel"]
    _pending: PendingSubmit


@final
class SubmitAccepted(msgspec.Struct, frozen=True):
    """The host accepted the submit (``ok: true``); the flow is complete.

    ``completion`` is the flow's ``completed`` event when the client has seen it by the time the
    outcome is returned (the two may arrive in either order); otherwise watch ``events()``.
    """

    ticket: SubmitTicket
    completion: FlowCompleted | None = None
    kind: Literal["accepted"] = "accepted"


@final
class SubmitRejected(msgspec.Struct, frozen=True):
    """The host refused the submit (``ok: false``) with one of the spec's codes.

    After ``invalid_answer`` or ``invalid_request`` the flow is unchanged and may be answered
    again; after ``flow_not_found`` it is gone (the client forgets it).
    """

    ticket: SubmitTicket
    error: SubmitErrorCode
    message: str
    kind: Literal["rejected"] = "rejected"

    @property
    def flow_still_open(self) -> bool:
        return self.error != "flow_not_found"


SubmitOutcome: TypeAlias = SubmitAccepted | SubmitRejected
