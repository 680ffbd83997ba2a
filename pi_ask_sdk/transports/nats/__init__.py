"""The fleet over NATS JetStream: one bridge for the Pis of many hosts (docs/fleet.md).

Needs the extra: ``pip install 'pi-ask-sdk[nats]'`` (nats-py). On each host a forwarder
(``pi-ask forward --nats URL``, ``pi_ask_sdk.fleet``) mirrors every local relay to NATS; a
bridge uses ``Fleet`` and its ``NatsTransport``s, one per Pi process, under the same
``Transport`` contract as ``RelayTransport``::

    async with Fleet("nats://nats.example:4222") as fleet:
        await fleet.serve(handler)      # handler(client: BridgeClient, pi: FleetPi)

or ``BridgeClient(fleet.transport(host, pid))`` for one Pi. Subject, stream and header names
live in ``pi_ask_sdk.transports.nats.subjects`` (importable without nats-py).
"""

from __future__ import annotations

from pi_ask_sdk.errors import FleetError, FleetPayloadTooLarge, FleetPiNotFound, FleetUnavailable

from ._fleet import Fleet, FleetHandler, FleetPi, pi_transport, serve_fleet
from ._setup import (
    FleetSettings,
    Heartbeat,
    NatsOptions,
    PiState,
    TooLarge,
    connect_nats,
    ensure_streams,
)
from ._transport import FleetConnection, NatsTransport
from .subjects import DEFAULT_PREFIX, FleetNames, FlowKind, Header, check_host_id, flow_token

__all__ = [
    "DEFAULT_PREFIX",
    "Fleet",
    "FleetConnection",
    "FleetError",
    "FleetHandler",
    "FleetNames",
    "FleetPayloadTooLarge",
    "FleetPi",
    "FleetPiNotFound",
    "FleetSettings",
    "FleetUnavailable",
    "FlowKind",
    "Header",
    "Heartbeat",
    "NatsOptions",
    "NatsTransport",
    "PiState",
    "TooLarge",
    "check_host_id",
    "connect_nats",
    "ensure_streams",
    "flow_token",
    "pi_transport",
    "serve_fleet",
]

# Documented where users import them from.
for _public in (
    Fleet,
    FleetPi,
    FleetSettings,
    Heartbeat,
    NatsOptions,
    NatsTransport,
    PiState,
    TooLarge,
):
    _public.__module__ = __name__
del _public
