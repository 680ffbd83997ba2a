"""The fleet's public face: a handful of names (and its errors) in ``pi_ask_sdk.fleet``; the
rest of the package is its layers, read by tools through their public modules."""

from __future__ import annotations

import pi_ask_sdk.fleet
from pi_ask_sdk.errors import BridgeError, TransportUnavailable
from pi_ask_sdk.fleet import errors


def test_the_fleet_exports_its_face_and_its_errors() -> None:
    assert sorted(pi_ask_sdk.fleet.__all__) == sorted(
        [
            "Fleet",
            "FleetPi",
            "FleetNames",
            "FleetSettings",
            "Forwarder",
            "NatsOptions",
            "NatsTransport",
            "pi_transport",
            *errors.__all__,
        ]
    )
    for name in pi_ask_sdk.fleet.__all__:
        value = getattr(pi_ask_sdk.fleet, name)
        assert getattr(value, "__module__", "").startswith("pi_ask_sdk.fleet"), name


def test_the_fleet_errors_hang_from_the_one_tree() -> None:
    assert issubclass(errors.FleetError, TransportUnavailable)
    assert issubclass(errors.FleetUnavailable, errors.FleetError)
    assert issubclass(errors.FleetPiNotFound, errors.FleetError)
    assert issubclass(errors.FleetPayloadTooLarge, BridgeError)
    assert issubclass(errors.FleetPayloadTooLarge, ValueError)
    assert errors.FleetPayloadTooLarge("a submit", 2, 1).code == "payload_too_large"
