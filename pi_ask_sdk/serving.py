"""One supervisor for many Pis: ``serve(handler, source)`` runs ``handler(client, pi)`` for every Pi
a source finds, each on its own ``BridgeClient``, now and later.

Two sources: ``RelayDirectory`` (the Pis of this machine, by their relay sockets) and the fleet
(``pi_ask_sdk.fleet.Fleet``: every Pi of every host). The supervisor owns the one rule of
serving: a Pi the source finds, or finds back, is served again whenever its client is not open
any more, whatever its old handler is still doing (a handler that lingers to flush a log, say,
finishes on its own, cancelled at the end). So a Pi is never left unserved while its source says
it is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Generic, Protocol, TypeVar

from ._tasks import cancel_and_wait, within
from .client import BridgeClient
from .errors import TransportUnavailable
from .transports.base import Transport
from .transports.relay import RelayInfo, RelayTransport, discover_relays

__all__ = ["PiSource", "RelayDirectory", "serve"]

log: Final = logging.getLogger("pi_ask_sdk.serving")

P = TypeVar("P")


class PiSource(Protocol[P]):
    """Where the Pis come from: ``RelayDirectory`` or a ``Fleet``."""

    async def follow(self, found: Callable[[P], bool], stop: asyncio.Event) -> None:
        """Call ``found(pi)`` for each Pi there now, each that comes later, and each found
        again (after its connection may have ended), until ``stop`` is set. ``found`` says
        whether the Pi is served by an open client now.

        Raises:
            TransportUnavailable: The source cannot be read at all.
        """
        ...

    def pi_key(self, pi: P) -> Hashable:
        """What identifies the Pi (found again under the same key)."""
        ...

    def pi_transport(self, pi: P) -> Transport:
        """A new, unopened transport to the Pi."""
        ...


@dataclass(frozen=True, slots=True)
class RelayDirectory:
    """The Pis of this machine: the relay sockets in ``directory`` (by default the relay's
    own rules find it: ``PI_ASK_RELAY_DIR``, ...), looked at every ``poll`` seconds (there is
    no event for a Pi starting).

    A Pi whose client ended (its session ended for good, it reloaded) is served again if its
    relay socket is still there at the next look.
    """

    directory: Path | None = None
    poll: float = 1.0

    async def follow(self, found: Callable[[RelayInfo], bool], stop: asyncio.Event) -> None:
        """Every relay found, at every look, until ``stop``.

        Raises:
            UnsafeRelayPath: The relay directory breaks the same-user rules.
        """
        served: set[Path] = set()  # (a forward we are connected to is listed without a probe)
        while not stop.is_set():
            relays = discover_relays(self.directory, known=served)
            served = {info.path for info in relays if found(info)}
            with contextlib.suppress(asyncio.TimeoutError):
                await within(stop.wait(), self.poll)

    def pi_key(self, pi: RelayInfo) -> Hashable:
        """The relay socket's path."""
        return pi.path

    def pi_transport(self, pi: RelayInfo) -> Transport:
        """A ``RelayTransport`` to the relay's socket."""
        return RelayTransport(pi.path)


class _Served(Generic[P]):
    """One Pi's handler: its client (open once ``opened``), its task."""

    def __init__(self, client: BridgeClient) -> None:
        self.client = client
        self.opened = False
        self.task: asyncio.Task[None] | None = None

    @property
    def over(self) -> bool:
        """The handler returned, or its client was open and is not any more."""
        task = self.task
        return task is None or task.done() or (self.opened and not self.client.is_open)


async def serve(
    handler: Callable[[BridgeClient, P], Awaitable[None]],
    source: PiSource[P],
    *,
    stop: asyncio.Event | None = None,
    request_id_prefix: str = "bridge",
) -> None:
    """Run ``handler(client, pi)`` for every Pi of ``source`` until ``stop`` is set (or
    cancelled). Each Pi gets its own ``BridgeClient``, so one Pi's session end, exit or failure
    touches only that Pi's forms; a handler's failure is logged (logger
    ``pi_ask_sdk.serving``) and stays with its Pi.

    A Pi the source finds again is served again as soon as its client is not open any more
    (its connection ended, or its handler returned), whatever its old handler is still doing.

    Args:
        handler: Serves one Pi, given its client (open) and the Pi.
        source: ``RelayDirectory(...)`` for this machine's Pis, or an open ``Fleet``.
        stop: Set it to stop serving; every handler is then cancelled.
        request_id_prefix: The start of every request id the clients make up.

    Raises:
        TransportUnavailable: The source cannot be read (``UnsafeRelayPath`` for a relay
            directory, ``FleetUnavailable`` for the fleet).
    """
    stop = asyncio.Event() if stop is None else stop
    serving: dict[Hashable, _Served[P]] = {}
    lingering: set[asyncio.Task[None]] = set()  # handlers whose client ended, returning
    loop = asyncio.get_running_loop()

    async def run_one(served: _Served[P], pi: P) -> None:
        try:
            async with served.client as client:
                served.opened = True
                await handler(client, pi)
        except asyncio.CancelledError:
            raise
        except TransportUnavailable as exc:
            log.info("pi_ask_sdk: not serving %s: %s", source.pi_key(pi), exc)
        except Exception:
            log.exception("pi_ask_sdk: serving %s failed", source.pi_key(pi))

    def found(pi: P) -> bool:
        if stop.is_set():
            return False
        key = source.pi_key(pi)
        current = serving.get(key)
        if current is not None and not current.over:
            return current.client.is_open
        if current is not None and current.task is not None and not current.task.done():
            lingering.add(current.task)
            current.task.add_done_callback(lingering.discard)
        client = BridgeClient(source.pi_transport(pi), request_id_prefix=request_id_prefix)
        served: _Served[P] = _Served(client)
        served.task = loop.create_task(run_one(served, pi))
        serving[key] = served
        return False

    try:
        await source.follow(found, stop)
    finally:
        tasks = [s.task for s in serving.values() if s.task is not None] + list(lingering)
        await cancel_and_wait(tasks, what="Pi handlers")
