"""The fleet over NATS JetStream: one bridge for the Pis of many hosts (docs/fleet.md).

Needs the extra: ``pip install 'pi-ask-sdk[nats]'`` (nats-py). On each host a forwarder
(``pi-ask forward --nats URL``, ``pi_ask_sdk.fleet``) mirrors every local relay to NATS; a
bridge uses ``Fleet`` and its ``NatsTransport``s, one per Pi process, under the same
``Transport`` contract as ``RelayTransport``::

    async with Fleet("nats://nats.example:4222") as fleet:
        await fleet.serve(handler)      # handler(client: BridgeClient, pi: FleetPi)

or ``BridgeClient(fleet.transport(host, pid))`` for one Pi. Subject, stream and header names
live in ``pi_ask_sdk.transports.nats.subjects``. Only those (and the errors) load with the
package: the rest loads nats-py when first used, so tools can name subjects without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pi_ask_sdk.errors import FleetError, FleetPayloadTooLarge, FleetPiNotFound, FleetUnavailable

from .subjects import (
    DEFAULT_PREFIX,
    FleetNames,
    FlowKind,
    Header,
    NatsPermissions,
    check_host_id,
    flow_token,
)

if TYPE_CHECKING:
    from ._fleet import Fleet, FleetHandler, FleetPi, pi_transport, serve_fleet
    from ._follow import Follower
    from ._setup import (
        FleetSettings,
        ForwarderBeat,
        Heartbeat,
        NatsOptions,
        PiState,
        TooLarge,
        close_nats,
        connect_nats,
        decode_body,
        encode_body,
        ensure_forwarder_consumer,
        ensure_streams,
        forwarder_consumer_config,
        jetstream_off,
        max_payload,
    )
    from ._transport import FleetConnection, NatsTransport

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
    "Follower",
    "ForwarderBeat",
    "Header",
    "Heartbeat",
    "NatsOptions",
    "NatsPermissions",
    "NatsTransport",
    "PiState",
    "TooLarge",
    "check_host_id",
    "close_nats",
    "connect_nats",
    "decode_body",
    "encode_body",
    "ensure_forwarder_consumer",
    "ensure_streams",
    "flow_token",
    "forwarder_consumer_config",
    "jetstream_off",
    "max_payload",
    "pi_transport",
    "serve_fleet",
]

_LAZY = {
    "Fleet": "_fleet",
    "FleetHandler": "_fleet",
    "FleetPi": "_fleet",
    "pi_transport": "_fleet",
    "serve_fleet": "_fleet",
    "FleetSettings": "_setup",
    "Heartbeat": "_setup",
    "ForwarderBeat": "_setup",
    "NatsOptions": "_setup",
    "PiState": "_setup",
    "TooLarge": "_setup",
    "close_nats": "_setup",
    "connect_nats": "_setup",
    "ensure_streams": "_setup",
    "ensure_forwarder_consumer": "_setup",
    "forwarder_consumer_config": "_setup",
    "encode_body": "_setup",
    "decode_body": "_setup",
    "max_payload": "_setup",
    "jetstream_off": "_setup",
    "Follower": "_follow",
    "FleetConnection": "_transport",
    "NatsTransport": "_transport",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
