"""A bridge in its own process, for the fault tests: ``python -m tests.fleet.bridge_proc URL
HOST PID PREFIX`` answers "yes" to each form of Pi PID on HOST whose tool call id starts with
PREFIX and prints one JSON line per outcome; ``{"ready": "1"}`` once its transport is open."""

from __future__ import annotations

import asyncio
import json
import sys

from pi_ask_sdk import BridgeClient, FlowView, SubmitAccepted
from pi_ask_sdk.transports.nats import Fleet
from tests.fleet.kit import yes


def say(**fields: str) -> None:
    print(json.dumps(fields), flush=True)


async def main(url: str, host: str, pid: int, prefix: str) -> None:
    async with (
        Fleet(url, heartbeat=0.2, idle_heartbeat=0.5) as fleet,
        BridgeClient(fleet.transport(host, pid), request_id_prefix="proc") as client,
    ):
        say(ready="1")

        async def answer(flow: FlowView) -> None:
            outcome = await client.respond(flow, yes(flow), timeout=30)
            kind = "accepted" if isinstance(outcome, SubmitAccepted) else type(outcome).__name__
            say(flow=flow.flow_id, call=flow.tool_call_id or "", outcome=kind)

        tasks = []
        async for flow in client.flows():
            if (flow.tool_call_id or "").startswith(prefix):
                tasks.append(asyncio.create_task(answer(flow)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
