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


def test_the_options_repr_shows_no_credential() -> None:
    """Options end up in logs, tracebacks and test reports: their repr masks the URL's user
    info, the password and the token, and still says where to connect and with what files."""
    from pi_ask_sdk.fleet import NatsOptions

    options = NatsOptions(
        "nats://alice:s3cret-url@a:4222,nats://b:4222",
        password="s3cret-pw",
        token="s3cret-token",
        creds="/etc/pi-ask/bot.creds",
    )
    shown = repr(options)
    assert "s3cret" not in shown, shown
    assert "url='nats://***@a:4222,nats://b:4222'" in shown, shown
    assert "password='***'" in shown, shown
    assert "token='***'" in shown, shown
    assert "creds='/etc/pi-ask/bot.creds'" in shown, shown
    assert "password=None" in repr(NatsOptions("nats://b:4222"))
    assert options.password == "s3cret-pw"  # (only what is shown changes)
