"""``ScriptedTransport``: a transport the test drives by hand, to deliver any raw payload to a
client (re-exported by ``pi_ask_sdk.testing``)."""

from __future__ import annotations

from collections.abc import Callable

from pi_ask_core import SubmitEvent
from pi_ask_sdk.errors import ConnectionLost, InvalidUse
from pi_ask_sdk.transports.base import EndReason, TransportListener

__all__ = ["ScriptedTransport"]


class ScriptedTransport:
    """A transport driven by the test: ``deliver`` any payload, ``end`` the session.

    Sent submits are kept in ``sent``; ``on_send`` (if set) runs inside ``send`` and may
    deliver acknowledgements synchronously, as an in-process host does.

    Args:
        on_send: Called with the transport and each submit, inside ``send``.
    """

    def __init__(
        self, on_send: Callable[[ScriptedTransport, SubmitEvent], None] | None = None
    ) -> None:
        self.on_send = on_send
        self.sent: list[SubmitEvent] = []
        self._listener: TransportListener | None = None
        self.closed = False

    async def open(self, listener: TransportListener) -> None:
        """Start delivering to ``listener`` (nothing is replayed)."""
        self._listener = listener

    async def send(self, payload: SubmitEvent) -> None:
        """Keep ``payload`` in ``sent`` and run ``on_send``.

        Raises:
            ConnectionLost: The transport is not open.
        """
        if self._listener is None:
            raise ConnectionLost("disconnected", "the scripted transport is not open")
        self.sent.append(payload)
        if self.on_send is not None:
            self.on_send(self, payload)

    async def close(self) -> None:
        """Stop delivering; ``closed`` is then true."""
        self._listener = None
        self.closed = True

    def deliver(self, channel: str, data: object, *, replay: bool = False) -> None:
        """Deliver any payload to the client, as the host would.

        Args:
            channel: The channel it arrives on.
            data: The payload (JSON text, decoded JSON or a wire Struct), well-formed or not.
            replay: Mark a ``started`` as a replayed form.

        Raises:
            InvalidUse: The transport is not open.
        """
        if self._listener is None:
            raise InvalidUse("deliver", "ScriptedTransport is not open")
        self._listener.message(channel, data, replay=replay)

    def end(self, reason: EndReason = "session_ended") -> None:
        """Tell the client the session ended, or (``"disconnected"``) the connection is gone.

        Raises:
            InvalidUse: The transport is not open.
        """
        if self._listener is None:
            raise InvalidUse("end", "ScriptedTransport is not open")
        self._listener.ended(reason)
