"""The fleet over NATS JetStream: one bridge for the Pis of many hosts (docs/fleet.md).

Needs the extra: ``pip install 'pi-ask-sdk[nats]'`` (nats-py). On each host a ``Forwarder``
(``pi-ask forward --nats URL``) mirrors every local relay to NATS; a bridge uses ``Fleet`` and
its ``NatsTransport``s, one per Pi process, under the same ``Transport`` contract as
``RelayTransport``::

    async with Fleet("nats://nats.example:4222") as fleet:
        await serve(handler, fleet)     # pi_ask_sdk.serving; handler(client, pi: FleetPi)

or ``BridgeClient(fleet.transport(host, pid))`` for one Pi.

The package in layers (each module names what it holds): ``protocol`` (every subject, record,
stream configuration and JetStream code), ``connection`` (``NatsOptions``, connecting, setting
up the streams), ``liveness`` (a beater and a liveness table), ``follow`` (one ordered consumer
read as a snapshot then a tail), the transport (``NatsTransport``), the bridge side (``Fleet``),
the forwarder (``Forwarder``, one link per Pi), and ``errors``. Tools (``pi-ask watch``,
``doctor``) read the public modules; a bridge or a forwarder needs only the names below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_ask_sdk._faces import lazy, publish

from .errors import (
    FleetError,
    FleetHostTaken,
    FleetPayloadTooLarge,
    FleetPiNotFound,
    FleetUnavailable,
)

if TYPE_CHECKING:
    from ._bridge import Fleet, FleetPi, pi_transport
    from ._forwarder import Forwarder
    from ._transport import NatsTransport
    from .connection import NatsOptions
    from .protocol import FleetNames, FleetSettings
else:
    # The errors load with the package; the rest needs nats-py and loads when first used, so
    # that `except FleetUnavailable` and tools that only name the package work without the extra.
    __getattr__ = lazy(
        __name__,
        globals(),
        {
            "Fleet": "._bridge",
            "FleetPi": "._bridge",
            "pi_transport": "._bridge",
            "Forwarder": "._forwarder",
            "NatsTransport": "._transport",
            "NatsOptions": ".connection",
            "FleetNames": ".protocol",
            "FleetSettings": ".protocol",
        },
    )

__all__ = [
    "Fleet",
    "FleetError",
    "FleetHostTaken",
    "FleetNames",
    "FleetPayloadTooLarge",
    "FleetPi",
    "FleetPiNotFound",
    "FleetSettings",
    "FleetUnavailable",
    "Forwarder",
    "NatsOptions",
    "NatsTransport",
    "pi_transport",
]

publish(__name__, __all__, globals())
