"""Internal: ``PendingSubmit``, the waiter behind a ``SubmitTicket`` (``outcomes``), kept by the
client's ``SubmitBook`` (``_pending``)."""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

from pi_ask_core import SubmitResultEvent

from .errors import ConnectionLostReason
from .forms import FlowId, FlowView

__all__ = ["PendingSubmit"]

C = TypeVar("C")


class PendingSubmit(Generic[C]):
    """Internal: the waiter a ``SubmitTicket`` refers to (armed before the submit is sent).

    ``verdict`` is the host's ``submit-result`` (or why it never will come); ``ending`` the
    flow's completion ``C`` (the client's ``FlowCompleted``) once a submit is accepted (or why
    it never will come), in either order.
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
        self.ending: C | ConnectionLostReason | None = None
        self.flow: FlowView | None = None  # the open form, kept from acceptance to completion

    def decide(self, verdict: SubmitResultEvent) -> None:
        if self.verdict is None:
            self.verdict = verdict
            if self._waiters is not None:  # (nobody waits when the host answered inside send)
                self._wake()

    def complete(self, completion: C) -> None:
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
