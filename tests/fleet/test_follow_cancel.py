"""A cancellation that comes just as one of ``Follower.start``'s waits completes stops it.

Python before 3.12: ``asyncio.wait_for`` returned the result then, swallowing the cancel, and
the task went on (``NatsTransport.open`` and ``pi-ask watch --nats`` hung). Unit tests: a
JetStream stand-in whose step cancels the starting task in the very step it completes in."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from nats.js import JetStreamContext

from pi_ask_sdk.transports.nats._follow import Follower, within


class _Info:
    num_pending = 0
    delivered = None


class _Sub:
    def __init__(self, js: _JetStream) -> None:
        self._js = js
        self.unsubscribed = False

    async def consumer_info(self) -> _Info:
        self._js.step_done("consumer_info")
        return _Info()

    async def unsubscribe(self) -> None:
        self.unsubscribed = True


class _JetStream:
    """Cancels ``victim`` as the step named ``cancel_at`` completes."""

    def __init__(self, cancel_at: str) -> None:
        self.cancel_at = cancel_at
        self.victim: asyncio.Task[None] | None = None
        self.subs: list[_Sub] = []

    def step_done(self, step: str) -> None:
        if step == self.cancel_at and self.victim is not None:
            self.victim.cancel()

    async def subscribe(self, *args: object, **kwargs: object) -> _Sub:
        sub = _Sub(self)
        self.subs.append(sub)
        self.step_done("subscribe")
        return sub


@pytest.mark.asyncio
@pytest.mark.parametrize("cancel_at", ["subscribe", "consumer_info"])
async def test_a_cancel_as_a_wait_completes_stops_start_and_unsubscribes(cancel_at: str) -> None:
    js = _JetStream(cancel_at)
    follower = Follower(cast(JetStreamContext, js), "S", "s.>", lambda msg: None)
    task = asyncio.get_running_loop().create_task(follower.start(5.0))
    js.victim = task
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert task.cancelled()
    assert [sub.unsubscribed for sub in js.subs] == [True]  # its consumer is not left behind


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
