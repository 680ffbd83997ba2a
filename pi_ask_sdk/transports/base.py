"""The ``Transport`` protocol: how a ``BridgeClient`` reaches a host.

A transport only moves payloads; the client does all parsing, filtering and correlation, so a
socket transport to a real Pi (``transports/relay/``) and the in-process one behave alike.

Contract:

* ``open(listener)`` connects and starts delivering host -> bridge messages to ``listener``:
  ``listener.message(channel, data, replay=...)`` for each payload (``data`` is anything
  ``pi_ask_core.decode_event`` takes: JSON text, decoded JSON, a wire Struct, or the
  ``decode_event`` result itself, which the client takes as it is, not decoding it again;
  ``replay=True`` marks a ``started`` for a form that was already open when the
  client connected), and ``listener.ended(reason)`` when the Pi session ended
  (``"session_ended"``: open forms are gone, the connection may carry a new session) or the
  connection is gone (``"disconnected"``: nothing more will arrive).
  A transport may deliver before ``open`` returns (replays) and may call the listener from any
  thread: the client hands calls from a foreign thread over to its event loop.
* ``send(payload)`` delivers one submit to the host. An in-process host may answer inside it
  (``submit-result`` and ``completed`` delivered before ``send`` returns); the client has armed
  its waiter first. Raise ``ConnectionLost`` when the submit cannot be delivered, with the
  reason the listener hears for the same loss (``disconnected`` only once it was told so; a
  loss first found by ``send`` is told to the listener before it raises).
* ``close()`` stops delivery; after it the listener is not called again. It is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from pi_ask_core import SubmitEvent

__all__ = [
    "EndReason",
    "Transport",
    "TransportFactory",
    "TransportListener",
]

EndReason = Literal["session_ended", "disconnected"]
"""Why a transport's listener was told ``ended``: Pi's session ended (its open forms are gone;
the connection may carry a new session) or the connection is gone for good."""


class TransportListener(Protocol):
    """What a transport delivers to (implemented by ``BridgeClient``). Never raises."""

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        """One payload from the host on ``channel``; ``replay`` marks a replayed ``started``."""
        ...

    def ended(self, reason: EndReason) -> None:
        """The session ended, or (``"disconnected"``) the connection is gone for good."""
        ...


class Transport(Protocol):
    """A connection to one host (see the module docstring for the contract)."""

    async def open(self, listener: TransportListener) -> None:
        """Connect and start delivering to ``listener`` (replays may come before it returns).

        Raises:
            TransportUnavailable: The host cannot be reached.
        """
        ...

    async def send(self, payload: SubmitEvent) -> None:
        """Deliver one submit to the host.

        Raises:
            ConnectionLost: The submit cannot be delivered (the reason the listener hears).
        """
        ...

    async def close(self) -> None:
        """Stop delivering; the listener is not called again. Idempotent."""
        ...


TransportFactory = Callable[[], Transport]
"""Makes a not-yet-opened transport; ``BridgeClient.connect(factory)`` takes one."""
