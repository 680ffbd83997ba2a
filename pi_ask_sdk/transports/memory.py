"""``MemoryTransport``: a client on an in-process ``pi_ask_core.EventBus`` (tests, demos).

It listens on the three host -> bridge channels and sends submits with
``bus.emit("pi-agent-ask:submit", payload)``, as a trusted extension on ``pi.events`` does. A
synchronous host (``FlowHost`` on ``LocalEventBus``) therefore acknowledges inside ``send``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import msgspec

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    EventBus,
    FlowHost,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    decode_event,
)
from pi_ask_sdk.errors import ConnectionLost, InvalidUse

from .base import EndReason, TransportListener

__all__ = ["MemoryTransport"]

_HOST_CHANNELS = (STARTED, COMPLETED, SUBMIT_RESULT)


class _Sending(threading.local):
    """Per bus (by id), the transport whose submit is being emitted and that submit's ids, only
    while it is: a synchronous host answers inside the emit, and only that transport may take
    the verdict (two clients may use the same requestId), as the relay marks it "own" for one
    connection. The verdict comes on the emitting thread, so each thread has its own marks (two
    threads emitting on one bus never see, nor restore, each other's)."""

    def __init__(self) -> None:
        self.by_bus: dict[int, tuple[MemoryTransport, str, str]] = {}


_SENDING = _Sending()


class MemoryTransport:
    """A ``Transport`` over an in-process bus.

    With ``host``, forms already open on that host when the client connects are delivered
    first, marked ``replay`` (their ``createdAt`` is the replay time: the host keeps no start
    time). ``end_session()`` / ``disconnect()`` tell the client what a socket transport would
    learn from Pi; ``FakeHost`` calls them.

    Args:
        bus: The bus the host listens and emits on.
        host: The host whose open forms a connecting client is replayed.
    """

    __slots__ = ("_bus", "_host", "_listener", "_unsubscribes")

    def __init__(self, bus: EventBus, host: FlowHost | None = None) -> None:
        self._bus = bus
        self._host = host
        self._listener: TransportListener | None = None
        self._unsubscribes: list[Callable[[], None]] = []

    @property
    def is_open(self) -> bool:
        """Whether the transport is open (delivering to a client)."""
        return self._listener is not None

    async def open(self, listener: TransportListener) -> None:
        """Listen on the bus and replay the host's open forms to ``listener``.

        Raises:
            InvalidUse: The transport is open already.
        """
        if self._listener is not None:
            raise InvalidUse("open", "MemoryTransport is already open")
        self._listener = listener
        for channel in _HOST_CHANNELS:
            self._unsubscribes.append(self._bus.on(channel, self._deliver(channel)))
        if self._host is not None and not self._host.is_closed:
            # Forms already announced and still open, as the relay replays them; a flow whose
            # ``started`` is still scheduled reaches the client live.
            for handle in self._host.active_flows:
                event = handle.started_event()
                if event is not None:
                    listener.message(STARTED, event, replay=True)

    def _deliver(self, channel: str) -> Callable[[object], None]:
        if channel != SUBMIT_RESULT:

            def handler(data: object) -> None:
                listener = self._listener
                if listener is not None:
                    listener.message(channel, data)

            return handler

        def verdict(data: object) -> None:
            listener = self._listener
            if listener is None:
                return
            sending = _SENDING.by_bus.get(id(self._bus))
            # (The common case, no submit or our own being emitted, needs no decode.)
            if sending is not None and sending[0] is not self and _answers(data, sending):
                return
            listener.message(channel, data)

        return verdict

    async def send(self, payload: SubmitEvent) -> None:
        """Emit the submit on the bus as decoded JSON; a synchronous host answers inside.

        Raises:
            ConnectionLost: The transport is not open.
        """
        # Decoded-JSON shape, as a bridge on pi.events sends it.
        self._emit(msgspec.to_builtins(payload), payload.request_id, payload.flow_id)

    def _emit(self, payload: object, request_id: str, flow_id: str) -> None:
        if self._listener is None:
            raise ConnectionLost("disconnected", "the memory transport is not open")
        marks, key = _SENDING.by_bus, id(self._bus)
        outer = marks.get(key)
        marks[key] = (self, request_id, flow_id)
        try:
            self._bus.emit(SUBMIT, payload)
        finally:
            if outer is None:
                del marks[key]
            else:
                marks[key] = outer

    async def close(self) -> None:
        """Stop listening; the client is not told anything more. Idempotent."""
        self._listener = None
        unsubscribes, self._unsubscribes = self._unsubscribes, []
        for unsubscribe in unsubscribes:
            unsubscribe()

    def end_session(self) -> None:
        """Tell the client the Pi session ended (open forms vanished without ``completed``)."""
        self._notify("session_ended")

    def disconnect(self) -> None:
        """Tell the client the connection is gone, then stop delivering."""
        self._notify("disconnected")
        self._listener = None
        unsubscribes, self._unsubscribes = self._unsubscribes, []
        for unsubscribe in unsubscribes:
            unsubscribe()

    def _notify(self, reason: EndReason) -> None:
        listener = self._listener
        if listener is not None:
            listener.ended(reason)


def _answers(data: object, sending: tuple[MemoryTransport, str, str]) -> bool:
    """Whether ``data`` is the verdict on ``sending``, another transport's submit being
    emitted now."""
    verdict = decode_event(SUBMIT_RESULT, data)
    if not isinstance(verdict, (SubmitAck, SubmitRejection)):
        return False
    return (verdict.request_id, verdict.flow_id) == sending[1:]
