"""The fleet with a real headless Pi (real relay, stand-in host) behind a forwarder and a real
nats-server: the relay's rules for headless Pis hold end to end across the broker.

With no answering bridge on the NATS side the model gets the host's fallback at once; with one,
the form opens and is answered over NATS; when the last bridge vanishes (killed: no goodbye),
the forwarder stops answering for the relay after three missed heartbeats and the relay's
grace period ends the call as a tool error.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, Forwarder
from pi_ask_sdk.testing.nats_server import NatsServer
from tests.integration.pi_process import TIMEOUT, PiEnv, PiProcess, choose
from tests.integration.test_headless import (
    GRACE_MS,
    assert_fallback,
    call,
    completed_flows,
    pi_with_grace,
    tool_end,
)

pytestmark = pytest.mark.pi

HEARTBEAT = 0.2


@pytest_asyncio.fixture
async def forwarded_pi(
    pi_installation: PiEnv,
    shared_tmp: Path,
    tmp_path: Path,
    pi_ask_nats_server: NatsServer,
) -> AsyncIterator[tuple[PiProcess, Forwarder]]:
    with pi_with_grace(pi_installation, shared_tmp, tmp_path / "pi", GRACE_MS) as pi:
        forwarder = Forwarder(
            pi_ask_nats_server.url, host_id="real", directory=pi.relay_dir, poll=0.05
        )
        await forwarder.open()
        stop = asyncio.Event()
        running = asyncio.create_task(forwarder.run(stop))
        try:
            yield pi, forwarder
        finally:
            stop.set()
            await asyncio.wait_for(running, 10)
            await forwarder.close()


@pytest.mark.asyncio
async def test_the_relay_rules_hold_across_the_broker(
    forwarded_pi: tuple[PiProcess, Forwarder], pi_ask_nats_server: NatsServer
) -> None:
    pi, forwarder = forwarded_pi
    url = pi_ask_nats_server.url

    # No answering bridge: the fallback, at once (the forwarder only observes).
    async with Fleet(url, role="observer") as watcher:
        await watcher.wait_pi("real", pi.pid, timeout=TIMEOUT)
        assert forwarder.relay_role == "observer"
        started = time.monotonic()
        since = await asyncio.to_thread(call, pi, "nobody")
        await asyncio.to_thread(assert_fallback, pi, "nobody", since, started)

    # An answering bridge: the form opens, and is answered over NATS.
    bridge = Fleet(url, heartbeat=HEARTBEAT)
    await bridge.open()
    try:
        await forwarder.wait_role("answerer", TIMEOUT)
        async with BridgeClient(bridge.transport("real", pi.pid)) as client:
            flows = client.flows()
            since = await asyncio.to_thread(call, pi, "answered")
            flow = await flows.next(timeout=TIMEOUT)
            assert flow.flow_id == "tool:answered"
            outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
            record = await asyncio.to_thread(tool_end, pi, "answered", since)
            assert record.get("isError") is False
            assert record["result"]["details"]["answers"]["q"]["values"] == ["b"]

            # The bridge vanishes without a word while a form waits for it.
            since = await asyncio.to_thread(call, pi, "vanished")
            flow = await flows.next(timeout=TIMEOUT)
            assert flow.flow_id == "tool:vanished"
            await bridge.nc.close()  # no goodbye: only the heartbeats stop
            vanished = time.monotonic()
            bound = 3 * HEARTBEAT + GRACE_MS / 1000 + 5
            record = await asyncio.to_thread(tool_end, pi, "vanished", since, bound)
            waited = time.monotonic() - vanished
    finally:
        await bridge.close()
    assert record.get("isError") is True
    assert "no pi-ask client that answers forms" in json.dumps(record["result"])
    assert waited >= GRACE_MS / 1000 * 0.9  # the relay's grace was given
    assert "tool:vanished" not in completed_flows(pi)
    assert forwarder.relay_role == "observer"
