"""Internal: the client's submit bookkeeping, its waiters and its memory of closed flows.

``SubmitBook`` correlates the host's ``submit-result`` with the waiter armed before the submit
was sent (by ``requestId`` and ``flowId``: acknowledgements are broadcast to every bridge) and
remembers, in a fixed-size most-recent memory, which flows can no longer take a submit, so a
second one is refused locally with nothing sent.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from typing import Literal, TypeAlias

from pi_ask_core import SubmitAck, SubmitResultEvent

from .errors import (
    ConnectionLost,
    ConnectionLostReason,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    InvalidRequestId,
)
from .forms import FlowId, FlowView
from .outcomes import FlowCompleted

__all__ = ["PendingSubmit", "SubmitBook"]


class PendingSubmit:
    """Internal: the waiter a ``SubmitTicket`` refers to (armed before the submit is sent).

    ``verdict`` is the host's ``submit-result`` (or why it never will come); ``ending`` the
    flow's completion once a submit is accepted (or why it never will come), in either order.
    Both are plain values: a future is made only when someone waits for a value not there yet
    (an in-process host settles both inside the send, so nothing ever waits).
    """

    __slots__ = (
        "_loop",
        "_waiters",
        "ending",
        "flow",
        "flow_id",
        "owner",
        "request_id",
        "verdict",
    )

    def __init__(
        self,
        owner: object,
        request_id: str,
        flow_id: FlowId,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.owner = owner
        self.request_id = request_id
        self.flow_id = flow_id
        self._loop = loop
        self._waiters: list[asyncio.Future[bool]] | None = None
        self.verdict: SubmitResultEvent | ConnectionLostReason | None = None
        self.ending: FlowCompleted | ConnectionLostReason | None = None
        self.flow: FlowView | None = None  # the open form, kept from acceptance to completion

    def decide(self, verdict: SubmitResultEvent) -> None:
        if self.verdict is None:
            self.verdict = verdict
            if self._waiters is not None:  # (nobody waits when the host answered inside send)
                self._wake()

    def complete(self, completion: FlowCompleted) -> None:
        if self.ending is None:
            self.ending = completion
            if self._waiters is not None:
                self._wake()

    def lose(self, reason: ConnectionLostReason) -> None:
        """No verdict, or no completion after an acceptance, will come."""
        if self.verdict is None:
            self.verdict = reason
        if self.ending is None:
            self.ending = reason
        self._wake()

    async def wait_verdict(self, timeout: float) -> bool:
        """Whether the verdict is there within ``timeout`` seconds."""
        while self.verdict is None:
            if not await self._wait(timeout):
                return self.verdict is not None
        return True

    async def wait_ending(self, deadline: float) -> bool:
        """Whether the ending is there by the loop time ``deadline``."""
        while self.ending is None:
            if not await self._wait(deadline - self._loop.time()):
                return self.ending is not None
        return True

    async def _wait(self, timeout: float) -> bool:
        """Wait for the next change, at most ``timeout`` seconds; False when the time ran out.

        The waiter is awaited directly with a timer that resolves it to False: before 3.12,
        ``asyncio.wait_for`` wakes the task through a second future, one more event-loop
        iteration on every remote round trip."""
        if timeout <= 0:
            return False
        loop = self._loop
        waiter: asyncio.Future[bool] = loop.create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        timer = loop.call_later(timeout, _expire, waiter)
        try:
            return await waiter  # cancelling the task cancels the waiter, as wait_for does
        finally:
            timer.cancel()
            waiters = self._waiters
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(True)

    def __repr__(self) -> str:
        state = "waiting" if self.verdict is None else "done"
        return f"<PendingSubmit {self.request_id!r} {state}>"


def _expire(waiter: asyncio.Future[bool]) -> None:
    """The timer of ``PendingSubmit._wait``: the time ran out before any change."""
    if not waiter.done():
        waiter.set_result(False)


Closed: TypeAlias = PendingSubmit | Literal["completed", "session_ended"]
"""Why a flow cannot take a submit: accepted (waiting for ``completed``), completed, or gone."""


class SubmitBook:
    """Waiters by request id, and the most recent ``memory`` flows that cannot take a submit."""

    __slots__ = ("closed", "memory", "pending")

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.pending: dict[str, PendingSubmit] = {}
        self.closed: OrderedDict[FlowId, Closed] = OrderedDict()

    def refuse_closed(self, flow_id: FlowId) -> None:
        """Raise when ``flow_id`` can no longer take a submit (nothing is sent)."""
        closed = self.closed.get(flow_id)
        if closed is None:
            return
        if closed == "completed":
            raise FlowAlreadyCompleted(flow_id)
        if closed == "session_ended":
            raise ConnectionLost("session_ended", f'flow "{flow_id}" was dropped with its session')
        raise FlowAlreadyAnswered(flow_id)

    def request_id(self, prefix: str, request_id: str | None) -> str:
        """``request_id`` checked (free, non-empty, UTF-8 safe), or a fresh random one."""
        if request_id is None:
            return f"{prefix}-{uuid.uuid4().hex}"
        if not isinstance(request_id, str) or not request_id:
            raise InvalidRequestId(str(request_id), "must be a non-empty string")
        if request_id in self.pending:
            raise InvalidRequestId(request_id, "is already used by a pending submit")
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
    ) -> PendingSubmit:
        """A waiter for the submit about to be sent (armed first: an in-process host
        acknowledges inside the send)."""
        pending = self.pending[request_id] = PendingSubmit(owner, request_id, flow_id, loop)
        return pending

    def disarm(self, pending: PendingSubmit) -> None:
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
            if self.closed.get(flow_id) != "completed":
                self.remember(flow_id, pending)
        elif ack.error == "flow_not_found":
            open_flows.pop(flow_id, None)
        pending.decide(ack)

    def completed(self, flow_id: FlowId, completion: FlowCompleted) -> None:
        """Hand ``completion`` to every waiter of ``flow_id``, and remember it completed."""
        accepted = self.closed.get(flow_id)
        if isinstance(accepted, PendingSubmit):
            accepted.complete(completion)
        for pending in self.pending.values():
            if pending.flow_id == flow_id:
                pending.complete(completion)
        self.remember(flow_id, "completed")

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
