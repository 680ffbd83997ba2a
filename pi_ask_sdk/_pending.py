"""Internal: the client's submit bookkeeping, its waiters and its memory of closed flows.

``SubmitBook`` correlates the host's ``submit-result`` with the waiter armed before the submit
was sent (by ``requestId`` and ``flowId``: acknowledgements are broadcast to every bridge) and
remembers, in a fixed-size most-recent memory, which flows can no longer take a submit, so a
second one is refused locally with nothing sent.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from typing import Literal, TypeAlias

from pi_ask_core import SubmitAck, SubmitResultEvent

from ._waiter import PendingSubmit
from .errors import (
    ConnectionLost,
    ConnectionLostReason,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    InvalidRequestId,
)
from .forms import FlowId, FlowView
from .outcomes import FlowCompleted

__all__ = ["Closed", "SubmitBook"]


Closed: TypeAlias = PendingSubmit[FlowCompleted] | Literal["answered", "completed", "session_ended"]
"""Why a flow cannot take a submit: accepted (waiting for ``completed``), accepted and completed
(``answered``: this client's own submit), completed otherwise, or gone."""


class SubmitBook:
    """Waiters by request id, and the most recent ``memory`` flows that cannot take a submit."""

    __slots__ = ("closed", "memory", "pending")

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.pending: dict[str, PendingSubmit[FlowCompleted]] = {}
        self.closed: OrderedDict[FlowId, Closed] = OrderedDict()

    def refuse_closed(self, flow_id: FlowId) -> None:
        """Raise when ``flow_id`` can no longer take a submit (nothing is sent)."""
        closed = self.closed.get(flow_id)
        if closed is None:
            return
        if closed == "completed":
            raise FlowAlreadyCompleted(flow_id)
        if closed == "answered":
            raise FlowAlreadyAnswered(flow_id)
        if closed == "session_ended":
            raise ConnectionLost("session_ended", f'flow "{flow_id}" was dropped with its session')
        raise FlowAlreadyAnswered(flow_id)

    def resend(
        self, request_id: str | None, flow_id: FlowId
    ) -> PendingSubmit[FlowCompleted] | None:
        """The waiter of a submit sent before under ``request_id`` for ``flow_id`` whose verdict
        has not come (its wait timed out): a retry under the same id shares it."""
        pending = None if request_id is None else self.pending.get(request_id)
        return pending if pending is not None and pending.flow_id == flow_id else None

    def request_id(self, prefix: str, request_id: str | None) -> str:
        """``request_id`` checked (free, non-empty, UTF-8 safe), or a fresh random one:
        ``<prefix>-`` and 128 random bits from ``os.urandom`` as 32 hex digits."""
        if request_id is None:
            # secrets.token_hex(16) written out: importing secrets would weigh on every
            # `import pi_ask_sdk`, and a UUID object per submit is work the id does not need
            return f"{prefix}-{os.urandom(16).hex()}"
        if not isinstance(request_id, str) or not request_id:
            raise InvalidRequestId(str(request_id), "must be a non-empty string")
        if request_id in self.pending:
            raise InvalidRequestId(
                request_id, "is already used by a pending submit for another flow"
            )
        if not request_id.isascii():
            try:
                request_id.encode("utf-8")
            except UnicodeEncodeError:
                # The host echoes it with U+FFFD in place of the surrogate: it could never match.
                raise InvalidRequestId(
                    request_id, "holds a lone surrogate (the host would echo it changed)"
                ) from None
        return request_id

    def arm(
        self, owner: object, request_id: str, flow_id: FlowId, loop: asyncio.AbstractEventLoop
    ) -> PendingSubmit[FlowCompleted]:
        """A waiter for the submit about to be sent (armed first: an in-process host
        acknowledges inside the send)."""
        pending: PendingSubmit[FlowCompleted] = PendingSubmit(owner, request_id, flow_id, loop)
        self.pending[request_id] = pending
        return pending

    def disarm(self, pending: PendingSubmit[FlowCompleted]) -> None:
        """Forget a waiter whose submit was never sent."""
        if self.pending.get(pending.request_id) is pending:
            del self.pending[pending.request_id]

    def acknowledged(self, ack: SubmitResultEvent, open_flows: dict[FlowId, FlowView]) -> None:
        """Decide the waiter ``ack`` answers; nothing for another bridge's submit (matched by
        ``requestId`` and ``flowId``: acknowledgements are broadcast). An accepted submit's flow
        leaves ``open_flows`` and waits for ``completed``; one the host no longer knows leaves
        it too. (One method for the whole acknowledgement: it runs once per submit.)"""
        pending = self.pending.get(ack.request_id)
        if pending is None or pending.flow_id != ack.flow_id:
            return
        del self.pending[ack.request_id]
        flow_id = pending.flow_id
        if isinstance(ack, SubmitAck):
            pending.flow = open_flows.pop(flow_id, None)  # kept from acceptance to completion
            # Completed first (the reference order): the flow is answered, by this client.
            done = self.closed.get(flow_id) == "completed"
            self.remember(flow_id, "answered" if done else pending)
        elif ack.error == "flow_not_found":
            open_flows.pop(flow_id, None)
        pending.decide(ack)

    def completed(self, flow_id: FlowId, completion: FlowCompleted) -> None:
        """Hand ``completion`` to every waiter of ``flow_id``, and remember it completed."""
        accepted = self.closed.get(flow_id)
        ours = isinstance(accepted, PendingSubmit)
        if isinstance(accepted, PendingSubmit):
            accepted.complete(completion)
        for pending in self.pending.values():
            if pending.flow_id == flow_id:
                pending.complete(completion)
        self.remember(flow_id, "answered" if ours or accepted == "answered" else "completed")

    def remember(self, flow_id: FlowId, closed: Closed) -> None:
        self.closed[flow_id] = closed
        self.closed.move_to_end(flow_id)
        while len(self.closed) > self.memory:
            self.closed.popitem(last=False)

    def lose_all(self, reason: ConnectionLostReason) -> None:
        """No verdict, nor any completion after an acceptance, will come."""
        pending, self.pending = self.pending, {}
        for waiter in pending.values():
            waiter.lose(reason)
        for closed in self.closed.values():
            if isinstance(closed, PendingSubmit):  # accepted, its completion still to come
                closed.lose(reason)
