"""The relay transport passes the Transport contract kit against the Python test relay."""

from __future__ import annotations

import pytest

from pi_ask_sdk.testing import CHECKS, AskParams, check_transport
from pi_ask_sdk.transports.relay import RelayTransport

from .fake_relay import FakeRelay


@pytest.mark.asyncio
async def test_the_relay_transport_passes_every_check(relay: FakeRelay) -> None:
    def open_form(params: AskParams, tool_call_id: str) -> None:
        relay.open_form(params, tool_call_id)

    passed = await check_transport(lambda: RelayTransport(relay.path), open_form, timeout=5.0)
    assert passed == list(CHECKS)
