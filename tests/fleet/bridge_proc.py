"""A bridge in its own process, for the fault tests.

``python -m tests.fleet.bridge_proc URL HOST PID PREFIX`` answers "yes" to each form of Pi PID on
HOST whose tool call id starts with PREFIX and prints one JSON line per outcome;
``{"ready": "1"}`` once its transport is open.

``python -m tests.fleet.bridge_proc --serve URL TIMEOUT PREFIX`` serves every Pi of the fleet
(``serve(handler, fleet)``, forwarder timeout TIMEOUT seconds) with a handler that answers the
same way and lingers 0.2 s after its Pi's stream ends (a handler that flushes a log, say); it
prints ``{"ready": "1"}`` once serving, ``{"served": "<pid>"}`` each time a handler starts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from pi_ask_sdk import BridgeClient, FlowView, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, FleetPi, FleetSettings
from pi_ask_sdk.serving import serve
from tests.fleet.kit import yes


def say(**fields: str) -> None:
    print(json.dumps(fields), flush=True)


async def answer(client: BridgeClient, flow: FlowView) -> None:
    outcome = await client.respond(flow, yes(flow), timeout=30)
    kind = "accepted" if isinstance(outcome, SubmitAccepted) else type(outcome).__name__
    say(flow=flow.flow_id, call=flow.tool_call_id or "", outcome=kind)


async def main(url: str, host: str, pid: int, prefix: str) -> None:
    async with (
        Fleet(url, heartbeat=0.2, idle_heartbeat=0.5) as fleet,
        BridgeClient(fleet.transport(host, pid), request_id_prefix="proc") as client,
    ):
        say(ready="1")
        tasks = []
        async for flow in client.flows():
            if (flow.tool_call_id or "").startswith(prefix):
                tasks.append(asyncio.create_task(answer(client, flow)))


async def serve_all(url: str, timeout: float, prefix: str) -> None:
    settings = FleetSettings(forwarder_timeout=timeout)

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        say(served=str(pi.pid))
        tasks = []
        try:
            with contextlib.suppress(Exception):
                async for flow in client.flows():
                    if (flow.tool_call_id or "").startswith(prefix):
                        tasks.append(asyncio.create_task(answer(client, flow)))
        finally:
            await asyncio.sleep(0.2)  # lingers after its stream ended (the test's point)

    # idle_heartbeat past the test's stop: nats-py's reset of a consumer that missed its
    # heartbeats delivers every Pi's state again, which would hide a Pi left unserved.
    async with Fleet(url, heartbeat=0.2, idle_heartbeat=10.0, settings=settings) as fleet:
        stop = asyncio.Event()
        serving = asyncio.create_task(serve(handler, fleet, stop=stop))
        say(ready="1")
        await serving


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        asyncio.run(serve_all(sys.argv[2], float(sys.argv[3]), sys.argv[4]))
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
