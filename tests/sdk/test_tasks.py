"""``pi_ask_sdk._tasks``: a wait that never loses a cancellation, and a shutdown that never
hangs on a task that swallowed one (``asyncio.wait_for`` before Python 3.12 did, in nats-py and
in any handler)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pi_ask_sdk._tasks import cancel_and_wait, within


@pytest.mark.asyncio
async def test_within_returns_raises_and_never_swallows_a_cancel() -> None:
    async def value() -> int:
        return 7

    assert await within(value(), 1.0) == 7
    never = asyncio.Event()
    with pytest.raises(asyncio.TimeoutError):
        await within(never.wait(), 0.01)

    inner_done = asyncio.Event()

    async def completes_and_cancels_caller(caller: asyncio.Task[None]) -> int:
        caller.cancel()  # the cancel arrives in the step the awaited thing completes
        inner_done.set()
        return 1

    async def caller() -> None:
        current = asyncio.current_task()
        assert current is not None
        await within(completes_and_cancels_caller(current), 5.0)
        await never.wait()  # (wait_for before 3.12 got here, and waited for ever)

    task = asyncio.get_running_loop().create_task(caller())
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert inner_done.is_set()


@pytest.mark.asyncio
async def test_cancel_and_wait_ends_tasks_that_swallow_a_cancellation() -> None:
    never = asyncio.Event()
    swallowed = asyncio.Event()
    waiting = asyncio.Event()

    async def swallows_one() -> None:
        try:
            waiting.set()
            await never.wait()
        except asyncio.CancelledError:
            swallowed.set()  # as wait_for did when the answer met the cancel: goes on
        await never.wait()

    async def fails_when_cancelled() -> None:
        try:
            await never.wait()
        finally:
            raise RuntimeError("a failure while ending")

    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(swallows_one()), loop.create_task(fails_when_cancelled())]
    await asyncio.wait_for(waiting.wait(), 5)  # (both run: fails_when_cancelled went first)
    await asyncio.wait_for(cancel_and_wait(tasks, patience=5.0), 5)
    assert swallowed.is_set()
    assert all(task.done() for task in tasks)
    assert tasks[0].cancelled()


@pytest.mark.asyncio
async def test_cancel_and_wait_gives_up_on_a_task_that_never_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    never = asyncio.Event()

    waiting = asyncio.Event()

    async def stubborn() -> None:
        waiting.set()
        while not never.is_set():
            try:
                await never.wait()
            except asyncio.CancelledError:
                continue

    task = asyncio.get_running_loop().create_task(stubborn())
    await asyncio.wait_for(waiting.wait(), 5)
    with caplog.at_level(logging.WARNING, logger="pi_ask_sdk"):
        await asyncio.wait_for(cancel_and_wait([task], patience=0.2, what="test tasks"), 5)
    assert not task.done()  # left running, said so: a shutdown never hangs
    assert "1 of the test tasks did not end when cancelled" in caplog.text
    never.set()  # (it ends now)
    await asyncio.wait_for(task, 5)
