"""One bridge for every running Pi of this machine: ``serve`` over its ``RelayDirectory``.

Each Pi gets its own client, so one Pi's session end, exit or failure touches only that Pi's
forms and pending submits. There is no event for a Pi starting, so the relay directory is polled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from .client import BridgeClient
from .serving import RelayDirectory, serve
from .transports.relay import RelayInfo

__all__ = ["PiHandler", "serve_every_pi"]

PiHandler = Callable[[BridgeClient, RelayInfo], Awaitable[None]]
"""Serves one Pi: typically ``async for flow in client.flows(): ...`` until it ends."""


async def serve_every_pi(
    handler: PiHandler,
    *,
    directory: Path | None = None,
    poll: float = 1.0,
    stop: asyncio.Event | None = None,
) -> None:
    """Run ``handler(client, relay)`` for every running Pi until ``stop`` is set (or cancelled):
    ``serve(handler, RelayDirectory(directory, poll), stop=stop)``.

    A Pi whose client ended (its handler returned, or its connection ended) is served again if
    its relay socket is still there at the next poll, e.g. after Pi reloaded. An exception in one
    Pi's handler is logged (logger ``pi_ask_sdk.serving``) and ends only that Pi's client.

    Args:
        handler: Serves one Pi, given its client (open) and its relay.
        directory: The relay directory; by default the relay's own rules find it
            (``PI_ASK_RELAY_DIR``, ...).
        poll: Seconds between looks for new Pis.
        stop: Set it to stop serving; every handler is then cancelled.

    Raises:
        UnsafeRelayPath: The relay directory breaks the same-user rules.
    """
    await serve(handler, RelayDirectory(directory, poll), stop=stop)
