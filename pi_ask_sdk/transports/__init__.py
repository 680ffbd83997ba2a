"""Transports carry payloads between a ``BridgeClient`` and a host.

``memory`` is the in-process one (tests, demos); ``relay`` is a socket to the relay extension in
a real Pi and provides ``discover() -> Transport`` for ``BridgeClient.connect()``.
``RelayTransport`` is importable from here too, but loaded only when first used: the socket
machinery is not worth importing for bridges that never reach a real Pi.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_ask_sdk._faces import lazy

from .base import EndReason, Transport, TransportFactory, TransportListener
from .memory import MemoryTransport

if TYPE_CHECKING:
    from .relay import RelayTransport
else:
    __getattr__ = lazy(__name__, globals(), {"RelayTransport": ".relay"})

__all__ = [
    "EndReason",
    "MemoryTransport",
    "RelayTransport",
    "Transport",
    "TransportFactory",
    "TransportListener",
]
