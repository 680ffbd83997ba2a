"""The relay transport passes the Transport contract kit against a real Pi."""

from __future__ import annotations

import asyncio

import pytest

from pi_ask_sdk.testing import CHECKS, AskParams, check_transport
from pi_ask_sdk.transports.relay import RelayTransport
from tests.integration.pi_process import PiProcess

pytestmark = pytest.mark.pi


@pytest.mark.asyncio
async def test_the_relay_transport_passes_every_check_on_a_real_pi(fresh_pi: PiProcess) -> None:
    async def open_form(params: AskParams, tool_call_id: str) -> None:
        # PiProcess.open_form blocks until Pi reports the form open: off the event loop.
        await asyncio.to_thread(fresh_pi.open_form, params, tool_call_id=tool_call_id)

    passed = await check_transport(
        lambda: RelayTransport(fresh_pi.socket_path), open_form, timeout=10.0
    )
    assert passed == list(CHECKS)
