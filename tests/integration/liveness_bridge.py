"""A bridge in a process of its own for the liveness tests (``python -m
tests.integration.liveness_bridge MODE SOCKET``): it connects as an answerer, prints ``ready``,
then ``flow <id>`` for the first form it sees, and then, by ``MODE``:

* ``watch``: prints ``flow <id>`` for each later form and ``ended <reason>`` for each
  ``SessionEnded``; it answers nothing (the test stops it with SIGSTOP);
* ``block``: blocks its event loop on a line of stdin (a handler that never yields), then
  submits option ``b`` and prints ``outcome <kind> <reason>``;
* ``slow-async``: awaits a line of stdin (a person thinking; the loop runs on) and answers
  that option, then prints ``outcome <kind> pings=<answered> <connections made>``;
* ``slow-sync``: the same with ``SyncBridgeClient``, the main thread blocked in ``readline``.

Its signal dispositions are the defaults whatever the test run's were (a run with SIGINT
ignored, say), so the test's signals act as they say.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from pi_ask_sdk import BridgeClient, SubmitLost, SyncBridgeClient
from pi_ask_sdk.transports.relay import RelayTransport
from tests.integration.pi_process import choose

WAIT = 30.0
"""Bound of every wait of the bridge (the test bounds its own, shorter)."""


def say(text: str) -> None:
    print(text, flush=True)


async def watch(path: str) -> None:
    async with BridgeClient(RelayTransport(path)) as client:
        events = client.events()
        say("ready")
        async for event in events:
            if event.kind == "started":
                say(f"flow {event.flow.flow_id}")
            elif event.kind == "session_ended":
                say(f"ended {event.reason}")


async def block(path: str) -> None:
    async with BridgeClient(RelayTransport(path)) as client:
        flows = client.flows()
        say("ready")
        flow = await flows.next(timeout=WAIT)
        say(f"flow {flow.flow_id}")
        sys.stdin.readline()  # blocks the event loop: no ping is answered meanwhile
        ticket = await client.submit(flow, choose(flow, "b"))  # written before the loop reads
        outcome = await client.await_result(ticket, timeout=WAIT)
        reason = outcome.reason if isinstance(outcome, SubmitLost) else ""
        say(f"outcome {outcome.kind} {reason}".strip())


async def slow_async(path: str) -> None:
    transport = RelayTransport(path)
    async with BridgeClient(transport) as client:
        flows = client.flows()
        say("ready")
        flow = await flows.next(timeout=WAIT)
        say(f"flow {flow.flow_id}")
        value = (await asyncio.wait_for(asyncio.to_thread(sys.stdin.readline), WAIT)).strip()
        outcome = await client.respond(flow, choose(flow, value), timeout=WAIT)
        say(f"outcome {outcome.kind} pings={transport.pings_answered} {transport.connections}")


def slow_sync(path: str) -> None:
    transport = RelayTransport(path)
    with SyncBridgeClient(transport, timeout=WAIT) as client:
        flows = client.flows()
        say("ready")
        flow = flows.next(timeout=WAIT)
        say(f"flow {flow.flow_id}")
        value = sys.stdin.readline().strip()  # the main thread blocks; the client's does not
        outcome = client.respond(flow, choose(flow, value), timeout=WAIT)
        say(f"outcome {outcome.kind} pings={transport.pings_answered} {transport.connections}")


def main(mode: str, path: str) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCONT, signal.SIGTSTP):
        signal.signal(signum, signal.SIG_DFL)
    if mode == "slow-sync":
        slow_sync(path)
        return
    run = {"watch": watch, "block": block, "slow-async": slow_async}[mode]
    asyncio.run(run(path))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
