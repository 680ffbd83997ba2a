"""One replica of a bridge group in its own process, for the group tests.

``python -m tests.fleet.group_replica URL GROUP NAME MEMBERS [HOLD]`` joins group GROUP as
bridge NAME (``Fleet(..., group=GROUP, bridge_id=NAME)``), waits until the group has MEMBERS
live members, prints ``{"ready": NAME}``, then serves every Pi of the fleet: each form shown to
it is answered "yes" (its request ids start with NAME), with one JSON line when it is shown
(``shown``) and one per outcome (``replica``, ``flow``, ``outcome``). Each form whose tool
call id starts with HOLD is answered only once a line comes on stdin (a replica that believes
it owns a form and answers it late). SIGTERM is a clean shutdown: it stops serving, closes its
``Fleet`` (its goodbye) and prints ``{"closed": NAME}``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from pi_ask_sdk import BridgeClient, FlowView, SubmitAccepted, SubmitNotSent, SubmitRejected
from pi_ask_sdk.fleet import Fleet, FleetPi
from pi_ask_sdk.serving import serve
from tests.fleet.kit import yes


def say(**fields: str) -> None:
    print(json.dumps(fields), flush=True)


def kind(outcome: object) -> str:
    if isinstance(outcome, SubmitAccepted):
        return "accepted"
    if isinstance(outcome, SubmitRejected):
        return f"rejected:{outcome.error}"
    if isinstance(outcome, SubmitNotSent):
        return f"not_sent:{outcome.reason}"
    return type(outcome).__name__


async def main(url: str, group: str, name: str, members: int, hold: str) -> None:
    loop = asyncio.get_running_loop()
    go = asyncio.Event()
    stop = asyncio.Event()
    # SIGTERM (a deploy's stop): serving ends and the Fleet closes, saying goodbye to the group.
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if hold:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def wait_go() -> None:
            await reader.readline()
            go.set()

        waiting = loop.create_task(wait_go())

    async def answer(client: BridgeClient, flow: FlowView) -> None:
        say(replica=name, shown=flow.flow_id)
        if hold and (flow.tool_call_id or "").startswith(hold):
            await go.wait()
        outcome = await client.respond(flow, yes(flow), timeout=30)
        say(replica=name, flow=flow.flow_id, outcome=kind(outcome))

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        tasks = []
        async for flow in client.flows():
            tasks.append(asyncio.create_task(answer(client, flow)))

    async with Fleet(url, heartbeat=0.2, idle_heartbeat=0.5, group=group, bridge_id=name) as fleet:
        await fleet.wait_group(members, 30)
        say(ready=name)
        # (the request ids' prefix: the hosts tell who answered)
        await serve(handler, fleet, stop=stop, request_id_prefix=name)
    say(closed=name)
    if hold:
        waiting.cancel()


if __name__ == "__main__":
    hold_prefix = sys.argv[5] if len(sys.argv) > 5 else ""
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), hold_prefix))
