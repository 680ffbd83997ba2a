"""``Follower``: one ordered JetStream consumer read as a snapshot, then as a live tail.

With ``DeliverPolicy.LAST_PER_SUBJECT`` on a stream that keeps one message per subject, the
consumer first delivers the last word on every subject (the snapshot) and then every new
message (the tail), in stream order, from one consumer: nothing can fall between a snapshot
read and a subscription made after it, and nothing read in the snapshot can be older than what
the tail brings next. "Caught up" is the first message with no more pending (or a consumer
that had nothing to deliver)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy

from pi_ask_sdk._tasks import within

__all__ = ["Follower", "MsgHandler"]

log: Final = logging.getLogger("pi_ask_sdk.fleet")

MsgHandler = Callable[[Msg], None]
"""Handles one message of a followed stream, on the event loop."""


class Follower:
    """Follows ``subject`` of ``stream`` from ``policy`` on; calls ``handler(msg)`` for each
    message, in order, on the event loop. ``idle_heartbeat`` (seconds) bounds how long a lost
    consumer (a restarted server) goes unnoticed before nats-py recreates it where it left."""

    def __init__(
        self,
        js: JetStreamContext,
        stream: str,
        subject: str,
        handler: MsgHandler,
        *,
        policy: DeliverPolicy = DeliverPolicy.LAST_PER_SUBJECT,
        idle_heartbeat: float = 1.0,
    ) -> None:
        self._js = js
        self._stream = stream
        self._subject = subject
        self._handler = handler
        self._policy = policy
        self._idle_heartbeat = idle_heartbeat
        self._sub: JetStreamContext.PushSubscription | None = None
        self._received = 0
        self._caught_up = asyncio.Event()
        self._stopped = False

    @property
    def caught_up(self) -> bool:
        """Whether the snapshot (what the stream held when following began) was handled."""
        return self._caught_up.is_set()

    async def start(self, timeout: float) -> None:
        """Subscribe and wait (at most ``timeout`` s) until the snapshot has been handled.
        Raises ``TimeoutError`` or the nats-py error (the follower is stopped then)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        subscribing = asyncio.ensure_future(
            self._js.subscribe(
                self._subject,
                stream=self._stream,
                cb=self._on_msg,
                ordered_consumer=True,
                deliver_policy=self._policy,
                idle_heartbeat=self._idle_heartbeat,
            )
        )
        try:
            # ``within``, not ``wait_for``: a cancel that comes as a wait completes must stop
            # the caller (before Python 3.12 wait_for swallowed it: a hung open or watch).
            self._sub = await within(subscribing, timeout)
            if self._policy is DeliverPolicy.NEW:
                self._caught_up.set()
                return
            info = await within(self._sub.consumer_info(), max(0.01, deadline - loop.time()))
            delivered = info.delivered.consumer_seq if info.delivered is not None else 0
            if not info.num_pending and self._received >= (delivered or 0):
                self._caught_up.set()
            await within(self._caught_up.wait(), max(0.01, deadline - loop.time()))
        except BaseException:
            subscribed = subscribing.done() and not subscribing.cancelled()
            if self._sub is None and subscribed and subscribing.exception() is None:
                self._sub = subscribing.result()  # it subscribed as it was cancelled
            await self.stop()
            raise

    async def _on_msg(self, msg: Msg) -> None:
        if self._stopped:
            return
        self._received += 1
        try:
            self._handler(msg)
        except Exception:
            log.exception("pi_ask_sdk.fleet: handling a message on %s failed", msg.subject)
        if not self._caught_up.is_set():
            try:
                pending = msg.metadata.num_pending
            except (ValueError, IndexError, AttributeError):  # not a JetStream message
                return
            if pending == 0:
                self._caught_up.set()

    async def stop(self) -> None:
        """Stop delivery (idempotent); the ephemeral consumer goes with the subscription."""
        self._stopped = True
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(nats.errors.Error, OSError, asyncio.TimeoutError):
                await sub.unsubscribe()
