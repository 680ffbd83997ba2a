"""A bridge in a process of its own (``python -m tests.integration.bridge_process SOCKET``), for
tests that kill it: it connects as an answerer, prints ``ready``, then ``flow <id>`` for each
form it sees, and answers nothing."""

from __future__ import annotations

import asyncio
import sys

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.transports.relay import RelayTransport


async def main(path: str) -> None:
    async with BridgeClient(RelayTransport(path, reconnect=False)) as client:
        flows = client.flows()
        print("ready", flush=True)
        async for flow in flows:
            print(f"flow {flow.flow_id}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
