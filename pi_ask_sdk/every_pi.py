"""One bridge for every running Pi: a ``BridgeClient`` per relay, new Pis picked up as they start.

Each Pi gets its own client, so one Pi's session end, exit or failure touches only that Pi's
forms and pending submits. There is no event for a Pi starting, so the relay directory is polled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from ._tasks import cancel_and_wait, within
from .client import BridgeClient
from .transports.relay import RelayInfo, RelayTransport, discover_relays

__all__ = ["PiHandler", "serve_every_pi"]

log = logging.getLogger("pi_ask_sdk.every_pi")

PiHandler = Callable[[BridgeClient, RelayInfo], Awaitable[None]]
"""Serves one Pi: typically ``async for flow in client.flows(): ...`` until it ends."""


async def _serve_one(handler: PiHandler, info: RelayInfo) -> None:
    try:
        async with BridgeClient(RelayTransport(info.path), request_id_prefix="bridge") as client:
            await handler(client, info)
    except asyncio.CancelledError:
        raise
    except Exception:
        # One Pi's trouble is logged and stays with that Pi; the others are still served.
        log.exception("pi_ask_sdk: serving Pi %d (%s) failed", info.pid, info.path)


async def serve_every_pi(
    handler: PiHandler,
    *,
    directory: Path | None = None,
    poll: float = 1.0,
    stop: asyncio.Event | None = None,
) -> None:
    """Run ``handler(client, relay)`` for every running Pi until ``stop`` is set (or cancelled).

    A Pi whose handler returned (its connection ended) is served again if its relay socket is
    still there at the next poll, e.g. after Pi reloaded. An exception in one Pi's handler is
    logged (logger ``pi_ask_sdk.every_pi``) and ends only that Pi's client.

    Args:
        handler: Serves one Pi, given its client (open) and its relay.
        directory: The relay directory; by default the relay's own rules find it
            (``PI_ASK_RELAY_DIR``, ...).
        poll: Seconds between looks for new Pis.
        stop: Set it to stop serving; every handler is then cancelled.

    Raises:
        UnsafeRelayPath: The relay directory breaks the same-user rules.
    """
    stop = asyncio.Event() if stop is None else stop
    serving: dict[Path, asyncio.Task[None]] = {}
    try:
        while not stop.is_set():
            live = {path for path, task in serving.items() if not task.done()}
            for info in discover_relays(directory, known=live):
                task = serving.get(info.path)
                if task is None or task.done():
                    serving[info.path] = asyncio.create_task(_serve_one(handler, info))
            with contextlib.suppress(asyncio.TimeoutError):
                await within(stop.wait(), poll)
    finally:
        await cancel_and_wait(serving.values(), what="Pi handlers")
