"""Transports carry payloads between a ``BridgeClient`` and a host.

``memory`` is the in-process one (tests, demos); ``relay`` is a socket to the relay extension in
a real Pi and provides ``discover() -> Transport`` for ``BridgeClient.connect()``.
``RelayTransport`` is importable from here too, but loaded only when first used: the socket
machinery is not worth importing for bridges that never reach a real Pi.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import base
from .base import EndReason, Transport, TransportFactory, TransportListener
from .memory import MemoryTransport

if TYPE_CHECKING:
    from .relay import RelayTransport

__all__ = [
    "EndReason",
    "MemoryTransport",
    "RelayTransport",
    "Transport",
    "TransportFactory",
    "TransportListener",
]


def __getattr__(name: str) -> object:
    if name == "RelayTransport":
        from .relay import RelayTransport

        return RelayTransport
    if name == "DecodedJsonTransport":  # deprecated: .base warns
        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
