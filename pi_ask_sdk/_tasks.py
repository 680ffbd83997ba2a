"""Waiting on and ending asyncio tasks without losing a cancellation.

Before Python 3.12, ``asyncio.wait_for`` returns the result when its caller is cancelled just as
the awaited thing completes: the cancellation is swallowed, and the caller goes on. nats-py
waits that way, and so may any bridge handler; these helpers keep such a swallow from hanging
a wait or a shutdown of ours."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from typing import Final, TypeVar

log: Final = logging.getLogger("pi_ask_sdk")

T = TypeVar("T")

RECANCEL_EVERY: Final = 0.5
"""Seconds between cancellations of a task that went on after one (it swallowed it)."""


async def within(awaitable: Awaitable[T], timeout: float) -> T:
    """``asyncio.wait_for(awaitable, timeout)`` that never loses a cancellation.

    A cancellation of the caller always raises ``CancelledError`` (the awaited thing is
    cancelled, or left completed: its result is the caller's to clean up); ``TimeoutError``
    after ``timeout`` seconds (it is cancelled)."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=max(0.0, timeout))
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait((task,))  # (its cancellation, or its completion, is in)
        raise
    if not done:
        task.cancel()
        await asyncio.wait((task,))
        if not task.cancelled() and task.exception() is None:
            return task.result()  # it completed as it was being cancelled
        raise asyncio.TimeoutError
    return task.result()


async def cancel_and_wait(
    tasks: Iterable[asyncio.Task[None]], *, patience: float = 10.0, what: str = "tasks"
) -> None:
    """Cancel ``tasks`` and wait until they have ended, their failures dropped.

    A task that goes on after its cancellation (it swallowed it) is cancelled again every
    ``RECANCEL_EVERY`` seconds; after ``patience`` seconds the rest are logged (naming
    ``what``) and left running, so that a shutdown never hangs."""
    pending = {task for task in tasks if not task.done()}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while pending:
        for task in pending:
            task.cancel()
        left = deadline - loop.time()
        if left <= 0:
            log.warning("pi_ask_sdk: %d of the %s did not end when cancelled", len(pending), what)
            return
        done, pending = await asyncio.wait(pending, timeout=min(RECANCEL_EVERY, left))
        for task in done:
            if not task.cancelled():
                task.exception()  # retrieved: a failure while ending is not reported again
