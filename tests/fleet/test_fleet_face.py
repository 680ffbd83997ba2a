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


def test_every_stream_gets_the_replicas_asked_for() -> None:
    from pi_ask_sdk.fleet import FleetNames, FleetSettings

    configs = FleetSettings(replicas=3).streams(FleetNames())
    assert {c.name for c in configs} == {"PIASK_FLOWS", "PIASK_FORWARDERS"}
    assert {c.num_replicas for c in configs} == {3}


def test_a_url_is_shown_without_its_credentials() -> None:
    from pi_ask_sdk.fleet import NatsOptions

    options = NatsOptions(
        "tls://alice:s3cret@a:4222, tls://token@b:4222,tls://c:4222", nkey="/keys/user.nk"
    )
    assert options.shown_url == "tls://***@a:4222,tls://***@b:4222,tls://c:4222"
    assert options.nkey == "/keys/user.nk"
