"""The event bus abstraction: Pi's ``pi.events``, and an in-process implementation of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["EventBus", "Handler", "LocalEventBus", "Unsubscribe"]

Handler = Callable[[object], None]
Unsubscribe = Callable[[], None]


class EventBus(Protocol):
    """What the host and the in-process transport need of a bus (the shape of ``pi.events``)."""

    def emit(self, channel: str, data: object) -> None: ...

    def on(self, channel: str, handler: Handler) -> Unsubscribe: ...


class LocalEventBus:
    """A synchronous bus like Pi's ``EventEmitter``-based ``pi.events``.

    Handlers run inside ``emit``, in subscription order, all receiving the same object. A handler
    that raises is logged and the remaining handlers still run. Handlers added or removed during
    an emit take effect from the next emit, as in Node.
    """

    __slots__ = ("_handlers",)

    def __init__(self) -> None:
        # Per channel, (token, handler) pairs; the token tells apart two subscriptions of the
        # same function so that each unsubscribe removes exactly its own.
        self._handlers: dict[str, tuple[tuple[object, Handler], ...]] = {}

    def emit(self, channel: str, data: object) -> None:
        # Iterates a snapshot (tuples are replaced, never mutated), as Node does.
        for _, handler in self._handlers.get(channel, ()):
            try:
                handler(data)
            except Exception:
                _log_handler_error(channel, handler)

    def on(self, channel: str, handler: Handler) -> Unsubscribe:
        token = object()
        self._handlers[channel] = (*self._handlers.get(channel, ()), (token, handler))

        def unsubscribe() -> None:
            current = self._handlers.get(channel, ())
            # (a list, not a generator: tuple(<generator>) can leave a gen-0 GC count behind)
            remaining = tuple([pair for pair in current if pair[0] is not token])
            if len(remaining) == len(current):
                return
            if remaining:
                self._handlers[channel] = remaining
            else:
                del self._handlers[channel]

        return unsubscribe

    def listener_count(self, channel: str) -> int:
        """How many handlers are subscribed to ``channel``."""
        return len(self._handlers.get(channel, ()))


def _log_handler_error(channel: str, handler: Handler) -> None:
    # logging is imported here, not at module import: it costs more than the rest of the core.
    import logging

    logging.getLogger("pi_ask_core.bus").exception(
        "handler %r for %s raised; the other handlers still ran", handler, channel
    )
