"""The fleet tests run where nats-py and nats-server are installed, and never skip in CI."""

from __future__ import annotations

import pytest

from pi_ask_sdk.testing.nats_server import NatsServerError, find_nats_server

from .conftest import HAVE_NATS, NEEDS, _ci


def test_nats_py_and_the_server_are_installed() -> None:
    try:
        find_nats_server()
        ready = HAVE_NATS
    except NatsServerError:
        ready = False
    if not ready:
        if _ci():
            pytest.fail(NEEDS)
        pytest.skip(NEEDS)
