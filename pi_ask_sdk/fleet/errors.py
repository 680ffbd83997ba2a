"""The fleet's errors, under the one error tree of ``pi_ask_sdk.errors``::

BridgeError
├── FleetPayloadTooLarge   (also ValueError) bigger than NATS's max_payload (not sent)
└── TransportUnavailable
    └── FleetError         the fleet over NATS
        ├── FleetUnavailable   NATS or its JetStream cannot be reached or set up
        ├── FleetHostTaken     another live forwarder serves this host (a forwarder stops)
        └── FleetPiNotFound    no such Pi (host, pid) is up in the fleet
"""

from __future__ import annotations

from typing import Literal

from pi_ask_sdk.errors import BridgeError, TransportUnavailable

__all__ = [
    "FleetError",
    "FleetHostTaken",
    "FleetPayloadTooLarge",
    "FleetPiNotFound",
    "FleetUnavailable",
]


class FleetError(TransportUnavailable):
    """The fleet over NATS (``pi_ask_sdk.fleet``): a Pi or the broker is unreachable."""


class FleetUnavailable(FleetError):
    """The NATS server cannot be reached, or its JetStream refused to set up what the fleet
    needs (``detail`` says which); the nats-py error is the cause."""

    def __init__(self, url: str, detail: str) -> None:
        self.url = url
        self.detail = detail
        super().__init__(f"The fleet at {url} is unavailable: {detail}.")


class FleetHostTaken(FleetError):
    """Another forwarder of ``host`` is alive (it heartbeats): this one stops rather than
    mirror the same Pis twice. ``pid`` and ``machine`` name the other one (0 and "" when its
    heartbeat does not say), ``last_beat`` is how many seconds ago it last beat."""

    def __init__(self, host: str, pid: int, machine: str, last_beat: float) -> None:
        self.host = host
        self.pid = pid
        self.machine = machine
        self.last_beat = last_beat
        where = f"pid {pid} on machine {machine}" if pid and machine else "another process"
        super().__init__(
            f"host {host!r} already has a forwarder ({where}, last beat {last_beat:.1f} s ago); "
            "this one stops"
        )


class FleetPiNotFound(FleetError):
    """No forwarder reports the Pi ``pid`` on ``host`` as up (it exited, its forwarder said it
    is gone, or it never ran)."""

    def __init__(self, host: str, pid: int, detail: str = "") -> None:
        self.host = host
        self.pid = pid
        super().__init__(
            f"No Pi {pid} is up on host {host!r} in the fleet{': ' + detail if detail else ''}."
        )


class FleetPayloadTooLarge(BridgeError, ValueError):
    """A message is bigger than the NATS server accepts (``max_payload``, 1 MiB by default):
    nothing was sent. ``what`` names the message, ``size`` and ``limit`` are in bytes."""

    code: Literal["payload_too_large"] = "payload_too_large"

    def __init__(self, what: str, size: int, limit: int) -> None:
        self.what = what
        self.size = size
        self.limit = limit
        super().__init__(
            f"{what} is {size} bytes, more than the NATS server's max_payload of {limit} bytes "
            "(raise max_payload in nats-server's configuration); nothing was sent."
        )
