"""NatsTransport under the Transport contract, through a real nats-server and a forwarder."""

from __future__ import annotations

import pytest

from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.testing import CHECKS, AskParams, check_transport

from .conftest import Host


@pytest.mark.asyncio
async def test_the_nats_transport_passes_every_check(host: Host, fleet: Fleet) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)

    def open_form(params: AskParams, tool_call_id: str) -> None:
        relay.open_form(params, tool_call_id)

    passed = await check_transport(
        lambda: fleet.transport("h1", relay.pid), open_form, timeout=10.0
    )
    assert passed == list(CHECKS)
