"""A real Pi's relay answered from a uvloop loop (the Python relay's runs:
tests/sdk/test_uvloop.py): the real relay's hello, client hello, welcome and pings."""

from __future__ import annotations

import pytest

pytest.importorskip("uvloop", reason="uvloop is in the test extra (not on Windows)")

from pi_ask_sdk import SubmitAccepted
from pi_ask_sdk.transports.relay import RelayTransport
from tests.integration.pi_process import TIMEOUT, PiProcess, choose, next_flow, single_question
from tests.on_uvloop import run_on_uvloop

pytestmark = pytest.mark.pi


def test_a_form_of_a_real_pi_is_answered_on_uvloop(module_pi: PiProcess) -> None:
    async def main() -> tuple[str, SubmitAccepted]:
        async with module_pi.client() as client:
            transport = client.transport
            assert isinstance(transport, RelayTransport)
            flows = client.flows()
            flow_id = module_pi.open_form(single_question(), tool_call_id="uvloop-1")
            flow = await next_flow(flows, flow_id)
            outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        return flow_id, outcome

    flow_id, outcome = run_on_uvloop(main, 60)
    assert outcome.completion.result.answers["q"].values == ["b"]
    assert not outcome.completion.result.cancelled
    assert flow_id not in module_pi.open_flow_ids()
