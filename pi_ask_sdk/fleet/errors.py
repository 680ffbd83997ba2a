"""The fleet's errors, under the one error tree of ``pi_ask_sdk.errors``::

BridgeError
├── FleetPayloadTooLarge   (also ValueError) bigger than NATS's max_payload (not sent)
└── TransportUnavailable
    └── FleetError         the fleet over NATS
        ├── FleetUnavailable   NATS or its JetStream cannot be reached or set up
        └── FleetPiNotFound    no such Pi (host, pid) is up in the fleet
"""

from __future__ import annotations

from typing import Literal

from pi_ask_sdk.errors import BridgeError, TransportUnavailable

__all__ = ["FleetError", "FleetPayloadTooLarge", "FleetPiNotFound", "FleetUnavailable"]


class FleetError(TransportUnavailable):
    """The fleet over NATS (``pi_ask_sdk.fleet``): a Pi or the broker is unreachable."""


class FleetUnavailable(FleetError):
    """The NATS server cannot be reached, or its JetStream refused to set up what the fleet
    needs (``detail`` says which); the nats-py error is the cause."""

    def __init__(self, url: str, detail: str) -> None:
        self.url = url
        self.detail = detail
        super().__init__(f"The fleet at {url} is unavailable: {detail}.")


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
