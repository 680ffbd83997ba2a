"""The bridge against a real Pi: `tox -e real-pi`, or `pytest --pi-ask-real-pi`."""

from __future__ import annotations

import asyncio

from deploy_policy import refuse_deploys

from pi_ask_sdk import FlowId
from pi_ask_sdk.testing.realpi import PiProcess

FORM = {
    "title": "Release 2.4.0",
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy to production?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        }
    ],
}


def test_refuses_a_deploy_asked_by_a_real_pi(pi_ask_real_pi: PiProcess) -> None:
    async def bridge() -> tuple[int, FlowId]:
        async with pi_ask_real_pi.client() as client:
            flow_id = pi_ask_real_pi.call_ask_user(FORM, tool_call_id="deploy-1")  # Pi's model asks
            return await asyncio.wait_for(refuse_deploys(client, limit=1), timeout=10), flow_id

    answered, flow_id = asyncio.run(bridge())
    assert answered == 1
    result = pi_ask_real_pi.result(flow_id)  # what Pi's agent got back
    assert result.answers["deploy"].values == ["no"]
    assert not result.cancelled
