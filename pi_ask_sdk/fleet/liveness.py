"""Liveness, written once: a ``Beater`` says "alive" every interval, a ``Liveness`` table counts
each peer alive until it has been silent for its timeout.

The bridge beats (its presence) and tracks forwarders; the forwarder beats (its presence) and
tracks answering bridges; ``pi-ask watch --nats`` tracks forwarders. Every one of them uses
these two, so "alive" means the same everywhere (docs/fleet.md, Forwarder liveness).
``pi-ask doctor --nats`` looks once instead of tracking: a forwarder is alive while its last
heartbeat is kept in the FORWARDERS stream, whose ``max_age`` is the same
``forwarder_timeout`` (``protocol``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from pi_ask_sdk._tasks import within

__all__ = ["Beater", "Liveness"]

log: Final = logging.getLogger("pi_ask_sdk.fleet")

Changed = Callable[[str, bool], None]
"""Told ``(key, alive)`` when a key becomes alive, or is counted gone."""


class Liveness:
    """Which peers are alive: each ``heard`` makes a key alive for ``timeout`` seconds more;
    a key not heard from for that long is gone (``on_change(key, False)``), as is one that
    said goodbye (``forget``). ``on_change(key, True)`` when a key becomes alive (again).

    Expiry runs on the event loop's clock: after the process was stopped (SIGSTOP, a
    suspended machine) every overdue key expires first, then what was buffered meanwhile is
    heard (alive again): a watcher must treat "alive again" as a new start."""

    def __init__(self, on_change: Changed | None = None) -> None:
        self._expiry: dict[str, asyncio.TimerHandle] = {}
        self._watchers: list[Changed] = [] if on_change is None else [on_change]
        self._closed = False

    def heard(self, key: str, timeout: float) -> bool:
        """``key`` is alive for ``timeout`` seconds more; True when it was not alive before."""
        if self._closed:
            return False
        handle = self._expiry.pop(key, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        self._expiry[key] = loop.call_later(max(0.0, timeout), self._expire, key)
        if handle is None:
            self._tell(key, True)
            return True
        return False

    def forget(self, key: str) -> bool:
        """``key`` is gone now (it said goodbye); True when it was alive."""
        handle = self._expiry.pop(key, None)
        if handle is None:
            return False
        handle.cancel()
        self._tell(key, False)
        return True

    def alive(self, key: str) -> bool:
        """Whether ``key`` was heard from within its timeout."""
        return key in self._expiry

    @property
    def keys(self) -> list[str]:
        """The keys alive now, sorted."""
        return sorted(self._expiry)

    def __len__(self) -> int:
        return len(self._expiry)

    def watch(self, watcher: Changed) -> Callable[[], None]:
        """Call ``watcher(key, alive)`` on every change; returns what stops it."""
        self._watchers.append(watcher)

        def unwatch() -> None:
            with contextlib.suppress(ValueError):
                self._watchers.remove(watcher)

        return unwatch

    async def wait(self, key: str, timeout: float) -> bool:
        """Whether ``key`` is alive now or becomes alive within ``timeout`` seconds."""
        if self.alive(key):
            return True
        heard: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def on_change(changed: str, alive: bool) -> None:
            if alive and changed == key and not heard.done():
                heard.set_result(True)

        unwatch = self.watch(on_change)
        try:
            return await within(heard, timeout)
        except asyncio.TimeoutError:
            return False
        finally:
            unwatch()

    def close(self) -> None:
        """Stop every expiry; nobody is told anything any more."""
        self._closed = True
        for handle in self._expiry.values():
            handle.cancel()
        self._expiry.clear()
        self._watchers.clear()

    def _expire(self, key: str) -> None:
        if self._expiry.pop(key, None) is not None and not self._closed:
            self._tell(key, False)

    def _tell(self, key: str, alive: bool) -> None:
        for watcher in list(self._watchers):
            try:
                watcher(key, alive)
            except Exception:
                log.exception("pi_ask_sdk.fleet: a liveness watcher failed")


class Beater:
    """Calls ``beat()`` now and every ``interval`` seconds until ``stop``; ``beat()`` publishes
    the heartbeat (and says nothing when there is nothing true to say)."""

    def __init__(self, beat: Callable[[], Awaitable[None]], interval: float) -> None:
        self._beat = beat
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Beat once now, then every ``interval`` seconds (in a task)."""
        await self._beat()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def now(self) -> None:
        """Beat at once (asked by a probe, or a change worth telling)."""
        await self._beat()

    async def stop(self) -> None:
        """Stop beating (idempotent)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)  # the heartbeat's period, not a synchronisation
            await self._beat()
