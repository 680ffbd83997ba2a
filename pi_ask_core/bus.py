"""The event bus abstraction: Pi's ``pi.events``, and an in-process implementation of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["EventBus", "Handler", "LocalEventBus", "Unsubscribe"]

Handler = Callable[[object], None]
"""Called with each payload emitted on its channel."""
Unsubscribe = Callable[[], None]
"""Removes the subscription that returned it."""


class EventBus(Protocol):
    """What the host and the in-process transport need of a bus (the shape of ``pi.events``)."""

    def emit(self, channel: str, data: object) -> None:
        """Deliver ``data`` to every handler of ``channel``."""
        ...

    def on(self, channel: str, handler: Handler) -> Unsubscribe:
        """Subscribe ``handler`` to ``channel``; call the result to unsubscribe."""
        ...


class LocalEventBus:
    """A synchronous bus like Pi's ``EventEmitter``-based ``pi.events``.

    Handlers run inside ``emit``, in subscription order, all receiving the same object. A handler
    that raises is logged and the remaining handlers still run. Handlers added or removed during
    an emit take effect from the next emit, as in Node.
    """

    __slots__ = ("_subscriptions",)

    def __init__(self) -> None:
        # Per channel, its subscriptions in order. Each is a (token, handler) pair: the token
        # tells apart two subscriptions of the same function, so that each unsubscribe removes
        # exactly its own. The tuples are replaced, never mutated: an emit iterates a snapshot.
        self._subscriptions: dict[str, tuple[tuple[object, Handler], ...]] = {}

    def emit(self, channel: str, data: object) -> None:
        """Run every handler of ``channel`` with ``data``, now, in subscription order. Never
        raises: a handler's exception is logged (logger ``pi_ask_core.bus``)."""
        for _, handler in self._subscriptions.get(channel, ()):
            try:
                handler(data)
            except Exception:
                _log_handler_error(channel, handler)

    def on(self, channel: str, handler: Handler) -> Unsubscribe:
        """Subscribe ``handler`` to ``channel`` (the same handler twice is two subscriptions);
        the result removes exactly this one."""
        token = object()
        self._subscriptions[channel] = (*self._subscriptions.get(channel, ()), (token, handler))

        def unsubscribe() -> None:
            kept = tuple(s for s in self._subscriptions.get(channel, ()) if s[0] is not token)
            if kept:
                self._subscriptions[channel] = kept
            else:
                self._subscriptions.pop(channel, None)

        return unsubscribe

    def listener_count(self, channel: str) -> int:
        """How many handlers are subscribed to ``channel``."""
        return len(self._subscriptions.get(channel, ()))


def _log_handler_error(channel: str, handler: Handler) -> None:
    # logging is imported here, not at module import: only a failing handler needs it, and
    # ``import pi_ask_core`` stays light (its import time is a bench/core.py target).
    import logging

    logging.getLogger("pi_ask_core.bus").exception(
        "handler %r for %s raised; the other handlers still ran", handler, channel
    )
