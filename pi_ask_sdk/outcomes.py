"""What a bridge gets back: submit tickets and outcomes, and the events of the client stream.

Both are closed, tagged unions (``kind``), so a ``match`` with ``assert_never`` proves every case
is handled: ``SubmitOutcome = SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost``
(what ``await_result`` returns), ``RespondOutcome = SubmitOutcome | SubmitNotSent`` (what
``respond`` returns) and ``BridgeEvent = FlowStarted | FlowCompleted | SessionEnded``. A
timed-out, lost or unsent submit is never reported as an answer or a cancel.

An outcome has no truth value: ``if outcome:`` / ``assert outcome`` raise ``TypeError`` at run
time, and are a mypy ``truthy-bool`` error with ``enable_error_code = truthy-bool`` (the
configuration the bridges guide recommends, ``pi-ask docs bridges``). Match it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NoReturn, TypeAlias, final

import msgspec

from pi_ask_core import AskResult
from pi_ask_core.protocol import FlowSource, SubmitErrorCode

from ._waiter import PendingSubmit
from .errors import ConnectionLostReason, InvalidArgument
from .forms import DisplayText, FlowId, FlowView

__all__ = [
    "BridgeEvent",
    "FlowCompleted",
    "FlowStarted",
    "NotSentReason",
    "RespondOutcome",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitLost",
    "SubmitNotSent",
    "SubmitOutcome",
    "SubmitRejected",
    "SubmitTicket",
    "SubmitTimedOut",
]

NotSentReason = Literal["session_ended", "disconnected", "closed", "flow_completed"]
"""Why ``respond`` sent nothing: the session ended (also a connection lost while the transport
reconnects: its forms are replayed, serve on), the connection is gone for good
(``disconnected``: the client's events have said ``SessionEnded("disconnected")``), the client
was closed, or the flow had already completed (e.g. answered in Pi meanwhile). The reason is
the one the client's events give for the same loss."""


class _NoTruthValue:
    """An outcome is matched, never tested for truth (``if outcome:`` would pass for every
    case). Run time only: type checkers must see no ``__bool__`` for ``truthy-bool`` to fire."""

    __slots__ = ()

    if not TYPE_CHECKING:

        def __bool__(self) -> NoReturn:
            raise InvalidArgument(
                "bool",
                "x",
                "a value with a truth value",
                self,
                message=f"a {type(self).__name__} has no truth value: match the outcome "
                "(case SubmitAccepted(): ...) or test its kind",
            )


# The events are ``gc=False``: immutable trees of views and results that never refer back, so
# never part of a reference cycle. (Tickets and outcomes are not: a ticket refers to its client.)


@final
class FlowStarted(msgspec.Struct, frozen=True, gc=False):
    """A form opened (or, with ``flow.replay``, was already open when the client connected)."""

    flow: FlowView
    kind: Literal["started"] = "started"


@final
class FlowCompleted(msgspec.Struct, frozen=True, gc=False):
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
class SessionEnded(msgspec.Struct, frozen=True, gc=False):
    """The Pi session ended or the connection dropped: every open flow is gone, without
    ``completed``. After ``disconnected`` the client's streams end."""

    reason: Literal["session_ended", "disconnected"]
    kind: Literal["session_ended"] = "session_ended"


BridgeEvent: TypeAlias = FlowStarted | FlowCompleted | SessionEnded
"""What ``BridgeClient.events()`` yields: a form started, a form completed, or the session
ended (its open forms are gone)."""


@final
class SubmitTicket(msgspec.Struct, frozen=True):
    """Proof that a submit was sent; pass it to ``BridgeClient.await_result``."""

    request_id: str
    flow_id: FlowId
    response_kind: Literal["answer", "cancel"]
    _pending: PendingSubmit[FlowCompleted]


@final
class SubmitAccepted(_NoTruthValue, msgspec.Struct, frozen=True):
    """The host accepted the submit (``ok: true``) and the flow completed with ``completion``
    (its ``completed`` event; the two may arrive in either order, and this waits for both)."""

    ticket: SubmitTicket
    completion: FlowCompleted
    kind: Literal["accepted"] = "accepted"


@final
class SubmitRejected(_NoTruthValue, msgspec.Struct, frozen=True):
    """The host refused the submit (``ok: false``) with one of the spec's codes.

    After ``invalid_answer`` or ``invalid_request`` the flow is unchanged and may be answered
    again; after ``flow_not_found`` it is gone (the client forgets it).
    """

    ticket: SubmitTicket
    error: SubmitErrorCode
    """The typed code: branch on it (it is the contract)."""
    message: DisplayText
    """For people: each host words it its own way (the real ``pi-agent-ask`` differently from
    ``pi_ask_core``). Display text, like a form's labels: show it (an f-string, ``str()``,
    ``.render()``) or log it; never parse it, compare it or send it on."""
    kind: Literal["rejected"] = "rejected"

    @property
    def flow_still_open(self) -> bool:
        """Whether the flow may be answered again (every code but ``flow_not_found``)."""
        return self.error != "flow_not_found"


@final
class SubmitTimedOut(_NoTruthValue, msgspec.Struct, frozen=True):
    """No outcome within ``timeout`` seconds: the submit's fate is unknown, and it is neither
    an answer nor a cancel. ``acknowledged`` is true when the host's acceptance was seen but
    not yet the flow's completion. The ticket stays valid: ``await_result`` it again."""

    ticket: SubmitTicket
    timeout: float
    acknowledged: bool = False
    kind: Literal["timed_out"] = "timed_out"


@final
class SubmitLost(_NoTruthValue, msgspec.Struct, frozen=True):
    """The submit was sent, and its flow was lost before its outcome was known: the session
    ended, the connection dropped or the client closed (``reason``). It is neither an answer
    nor a cancel. ``acknowledged`` is true when the host's acceptance was seen but not the
    flow's completion.
    """

    ticket: SubmitTicket
    reason: ConnectionLostReason
    acknowledged: bool = False
    kind: Literal["lost"] = "lost"

    @property
    def flow_id(self) -> FlowId:
        """The flow the lost submit was for."""
        return self.ticket.flow_id


@final
class SubmitNotSent(_NoTruthValue, msgspec.Struct, frozen=True):
    """``respond`` sent nothing: the flow was already gone (``reason``: its session ended or
    the connection was lost while the client reconnects (``session_ended``), the connection is
    gone for good (``disconnected``), the client closed, or it completed first, e.g. answered
    in Pi). The reason matches the ``SessionEnded`` event of the same loss."""

    flow_id: FlowId
    reason: NotSentReason
    kind: Literal["not_sent"] = "not_sent"


SubmitOutcome: TypeAlias = SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost
"""Every outcome of a sent submit (``await_result``), as a value: match it with
``assert_never`` in the default case."""

RespondOutcome: TypeAlias = SubmitOutcome | SubmitNotSent
"""Every outcome of ``respond``: a sent submit's, or ``SubmitNotSent``."""
