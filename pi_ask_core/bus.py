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

    __slots__ = ("_handlers", "_tokens")

    def __init__(self) -> None:
        # Per channel, the handlers, and beside them a token per subscription that tells apart
        # two subscriptions of the same function, so that each unsubscribe removes exactly its
        # own. (Two parallel tuples: emit iterates the handlers alone, no pair to unpack.)
        self._handlers: dict[str, tuple[Handler, ...]] = {}
        self._tokens: dict[str, tuple[object, ...]] = {}

    def emit(self, channel: str, data: object) -> None:
        # Iterates a snapshot (tuples are replaced, never mutated), as Node does.
        for handler in self._handlers.get(channel, ()):
            try:
                handler(data)
            except Exception:
                _log_handler_error(channel, handler)

    def on(self, channel: str, handler: Handler) -> Unsubscribe:
        token = object()
        self._handlers[channel] = (*self._handlers.get(channel, ()), handler)
        self._tokens[channel] = (*self._tokens.get(channel, ()), token)

        def unsubscribe() -> None:
            tokens = self._tokens.get(channel, ())
            if token not in tokens:
                return
            at = tokens.index(token)
            handlers = self._handlers[channel]
            if len(tokens) > 1:
                self._tokens[channel] = tokens[:at] + tokens[at + 1 :]
                self._handlers[channel] = handlers[:at] + handlers[at + 1 :]
            else:
                del self._tokens[channel], self._handlers[channel]

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
