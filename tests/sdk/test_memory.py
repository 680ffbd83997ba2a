"""10,000 flows through one client leave nothing behind."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from pi_ask_sdk import AnswerBuilder, BridgeClient, SubmitAccepted
from pi_ask_sdk.testing import FakeHost, yes_no_params

from .conftest import TIMEOUT

MEMORY = 256


async def run_flows(fake: FakeHost, client: BridgeClient, start: int, count: int) -> None:
    flows = client.flows()
    events = client.events()
    for n in range(start, start + count):
        fake.open(yes_no_params(), tool_call_id=f"c{n}")
        flow = await flows.next(timeout=TIMEOUT)
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        outcome = await client.respond(flow, answer, timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        assert (await events.next(timeout=TIMEOUT)).kind == "started"
        assert (await events.next(timeout=TIMEOUT)).kind == "completed"
    await flows.aclose()
    await events.aclose()


@pytest.mark.asyncio
async def test_ten_thousand_flows_retain_nothing() -> None:
    fake = FakeHost(record=False)
    async with fake.client(completed_memory=MEMORY) as client:
        await run_flows(fake, client, 0, 2 * MEMORY)  # warm up past the bounded memory
        gc.collect()
        objects_before = len(gc.get_objects())
        await run_flows(fake, client, 2 * MEMORY, 10_000)
        gc.collect()
        objects_grown = len(gc.get_objects()) - objects_before
        # Then the bytes, over a further window (tracemalloc slows everything down).
        tracemalloc.start()
        try:
            baseline, _ = tracemalloc.get_traced_memory()
            await run_flows(fake, client, 20_000, 2_000)
            gc.collect()
            retained, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # Nothing per flow survives: the client holds no open flows, no waiters, and a
        # fixed number of remembered finished flow ids.
        assert dict(client.open_flows) == {}
        assert client._book.pending == {}
        assert len(client._book.closed) == MEMORY
        assert len(fake.host.active_flows) == 0
        # One retained object per flow would be 10,000; 100 bytes per flow would be 200 kB.
        assert objects_grown < 1_000, objects_grown
        assert retained - baseline < 200_000, retained - baseline
