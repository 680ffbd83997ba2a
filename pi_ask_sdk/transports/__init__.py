"""Transports carry payloads between a ``BridgeClient`` and a host.

``memory`` is the in-process one (tests, demos); ``relay`` (a socket to the relay extension in
a real Pi) lives next to it and provides ``discover() -> Transport`` for
``BridgeClient.connect()``.
"""

from .base import EndReason, Transport, TransportFactory, TransportListener
from .memory import MemoryTransport

__all__ = ["EndReason", "MemoryTransport", "Transport", "TransportFactory", "TransportListener"]
