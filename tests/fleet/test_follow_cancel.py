"""A cancellation that comes just as one of ``Follower.start``'s waits completes stops it.

Python before 3.12: ``asyncio.wait_for`` returned the result then, swallowing the cancel, and
the task went on (``NatsTransport.open`` and ``pi-ask watch --nats`` hung). Unit tests: a
JetStream stand-in whose step cancels the starting task in the very step it completes in."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from nats.js import JetStreamContext

from pi_ask_sdk.fleet.follow import Follower


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
