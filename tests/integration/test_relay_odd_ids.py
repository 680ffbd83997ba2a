"""A host that keeps its flow ids as JavaScript holds them (as the real pi-agent-ask does:
``tool:${toolCallId}``), a tool call id holding a lone UTF-16 surrogate, real Pi, the real relay
and a bridge: the bridge sees the id with U+FFFD (relay input's decode rule) and its answer,
naming that id, reaches the form (the relay puts the host's own id back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_ask_sdk import FlowId, SubmitAccepted
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    next_flow,
    running_pi,
    single_question,
)

pytestmark = pytest.mark.pi

RAW_ID_HOST = Path(__file__).parent / "extensions" / "raw-id-host.ts"


@pytest.mark.asyncio
async def test_a_form_whose_flow_id_holds_a_lone_surrogate_is_answered_through_the_relay(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, host_extension=RAW_ID_HOST
    ) as pi:
        async with pi.client() as client:
            flows = client.flows()
            pi.prompt('/raw-id-open "x\\ud800y"')  # a JSON string: the host holds "x\ud800y"
            flow = await next_flow(flows, "tool:x\ufffdy")
            assert (flow.flow_id, flow.tool_call_id) == (FlowId("tool:x\ufffdy"), "x\ufffdy")
            outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
            # the relay stops replaying it: a new connection sees no open form
            async with pi.client() as later:
                assert list(later.open_flows) == []


@pytest.mark.asyncio
async def test_the_stand_in_hosts_a_tool_call_id_holding_a_lone_surrogate(
    module_pi: PiProcess,
) -> None:
    """The stand-in (``FlowHost``, the core's rule) takes Pi's tool call id as its cleaned copy:
    what a bridge sees of the real extension's flow through the relay, and it is answered."""
    pi = module_pi
    async with pi.client() as client:
        flows = client.flows()
        pi.wait_idle()
        since = pi.mark()
        pi.prompt(f"CALL ask_user#x\ud800y {json.dumps(single_question())}")
        flow = await next_flow(flows, "tool:x\ufffdy")
        assert flow.tool_call_id == "x\ufffdy"
        outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        record = pi.wait_record(
            lambda r: r.get("type") == "tool_execution_end", since=since, timeout=TIMEOUT
        )
        assert record["result"]["details"]["answers"]["q"]["values"] == ["a"]
        # the relay forgot the form with its tool call: a new connection sees none open
        async with pi.client() as later:
            assert list(later.open_flows) == []
