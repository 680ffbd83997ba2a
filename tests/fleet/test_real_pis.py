"""Two real Pis (Pi 1.6.0, headless) behind one forwarder and one bridge over a real nats-server.

Pi A's form is opened by the stand-in host directly (``/pi-ask-test-open``, as a TUI or a
resumed ask opens one); Pi B's by its model's ``ask_user`` call, which headless opens a form
only through the external-UI negotiation of the real pi-agent-ask (notes/real-extension.md):
the relay is the provider only while a client that answers forms is connected, here the
forwarder, which is one only while an answering bridge heartbeats on NATS. The bridge answers
a form of each Pi, and each gets its answer; with the bridge gone, Pi B's model gets the
fallback at once, and a form whose bridge leaves ends as a tool error after the relay's grace.

Runs in the tox env ``fleet`` (Pi installed by scripts/install-pi.sh); outside CI, without
Pi or nats-server, it skips saying how to enable it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from pi_ask_core import STARTED
from pi_ask_sdk import BridgeClient, FlowId, SubmitAccepted
from pi_ask_sdk.cli.doctor_fleet import survey_fleet
from pi_ask_sdk.cli.watch_fleet import watch_fleet
from pi_ask_sdk.fleet import Fleet, FleetNames, Forwarder, NatsOptions
from pi_ask_sdk.testing.nats_server import NatsServer
from pi_ask_sdk.testing.realpi import PiRecord
from tests.integration.conftest import pi_installation, shared_tmp
from tests.integration.pi_process import (
    PiEnv,
    PiProcess,
    choose,
    make_private_dir,
    next_flow,
    running_pi,
    single_question,
)

pytestmark = pytest.mark.pi
__all__ = ["pi_installation", "shared_tmp"]  # the real-Pi fixtures of tests/integration

HOST = "ci-1"
GRACE_MS = 1000
WAIT = 30.0
FALLBACK_WITHIN = 2.0
"""The relay's bound for the fallback without an answering client (it comes at once)."""


@pytest.fixture
def pis(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[PiProcess, PiProcess, Path]]:
    """Pi A and Pi B, headless, their relays in one directory (one host)."""
    base = tmp_path_factory.mktemp("fleetpi")
    relays = make_private_dir(base / "relay")
    grace = {"PI_ASK_RELAY_GRACE_MS": str(GRACE_MS)}
    options = {"shared_tmp": shared_tmp, "relay_dir": relays, "extra_env": grace}
    with (
        running_pi(pi_installation, base / "a", **options) as pi_a,  # type: ignore[arg-type]
        running_pi(pi_installation, base / "b", **options) as pi_b,  # type: ignore[arg-type]
    ):
        yield pi_a, pi_b, relays


@pytest_asyncio.fixture
async def forwarder(
    nats_server: NatsServer, pis: tuple[PiProcess, PiProcess, Path]
) -> AsyncIterator[Forwarder]:
    """The host's forwarder, following both relays."""
    forwarder = Forwarder(
        nats_server.url, host_id=HOST, directory=pis[2], poll=0.1, idle_heartbeat=0.5
    )
    await forwarder.open()
    stop = asyncio.Event()
    run = asyncio.get_running_loop().create_task(forwarder.run(stop))
    try:
        yield forwarder
    finally:
        stop.set()
        await asyncio.wait_for(run, WAIT)
        await asyncio.wait_for(forwarder.close(), WAIT)


@contextlib.asynccontextmanager
async def bridge(url: str) -> AsyncIterator[Fleet]:
    async with Fleet(url, heartbeat=0.2, idle_heartbeat=0.5) as fleet:
        yield fleet


def no_answerer(pi: PiProcess, timeout: float = WAIT) -> None:
    """Until Pi's relay counts no answering client (a bounded poll, as ``wait_answerer``'s:
    the relay announces no change of its clients)."""
    deadline = time.monotonic() + timeout
    while pi.relay_clients()[0] != 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"the relay of Pi {pi.pid} still counts an answering client")
        time.sleep(0.05)


async def tool_end(pi: PiProcess, call_id: str, since: int, timeout: float = WAIT) -> PiRecord:
    """Pi's record of the end of tool call ``call_id`` (read on a thread: Pi's waits block)."""

    def ended(record: PiRecord) -> bool:
        return record.get("type") == "tool_execution_end" and record.get("toolCallId") == call_id

    return await asyncio.to_thread(pi.wait_record, ended, since=since, timeout=timeout)


async def ask(pi: PiProcess, call_id: str) -> int:
    """Pi's scripted model calls ask_user (headless: negotiated); returns the mark before."""
    since = pi.mark()
    await asyncio.to_thread(pi.call_ask_user, single_question(), tool_call_id=call_id)
    return since


@pytest.mark.asyncio
async def test_one_bridge_answers_both_pis_and_without_it_the_headless_pi_falls_back(
    nats_server: NatsServer, pis: tuple[PiProcess, PiProcess, Path], forwarder: Forwarder
) -> None:
    pi_a, pi_b, _ = pis
    async with bridge(nats_server.url) as fleet:
        await forwarder.wait_role("answerer", WAIT)
        for pi in (pi_a, pi_b):
            await fleet.wait_pi(HOST, pi.pid, timeout=WAIT)
        # (wait until both relays count the forwarder as their answering client)
        for pi in (pi_a, pi_b):
            await asyncio.to_thread(pi.wait_answerer, timeout=WAIT)
        async with (
            BridgeClient(fleet.transport(HOST, pi_a.pid)) as client_a,
            BridgeClient(fleet.transport(HOST, pi_b.pid)) as client_b,
        ):
            flows_a, flows_b = client_a.flows(), client_b.flows()
            # Pi A: the stand-in host opens the form directly.
            flow_id = await asyncio.to_thread(pi_a.open_form, single_question())
            flow = await next_flow(flows_a, flow_id)
            outcome = await client_a.respond(flow, choose(flow, "b"), timeout=WAIT)
            assert isinstance(outcome, SubmitAccepted)
            result = await asyncio.to_thread(pi_a.result, flow_id, timeout=WAIT)
            assert result.answers["q"].values == ["b"]
            # Pi B: its model asks; headless, the form opens through the negotiation.
            since = await ask(pi_b, "answered")
            flow = await next_flow(flows_b, "tool:answered")
            outcome = await client_b.respond(flow, choose(flow, "a"), timeout=WAIT)
            assert isinstance(outcome, SubmitAccepted)
        record = await tool_end(pi_b, "answered", since)
        assert record.get("isError") is False
        assert record["result"]["details"]["answers"]["q"]["values"] == ["a"]
    # The bridge said goodbye: nobody answers; the forwarder stops saying it does, to both.
    await forwarder.wait_role("observer", WAIT)
    for pi in (pi_a, pi_b):
        await asyncio.to_thread(no_answerer, pi)
    await asyncio.to_thread(pi_b.wait_idle, timeout=WAIT)
    started = time.monotonic()
    since = await ask(pi_b, "nobody")
    record = await tool_end(pi_b, "nobody", since)
    assert time.monotonic() - started < FALLBACK_WITHIN
    assert record.get("isError") is False
    details = record["result"]["details"]
    assert (details["cancelled"], details["answers"]) == (True, {})
    assert FlowId("tool:nobody") not in await asyncio.to_thread(pi_b.open_flow_ids)


@pytest.mark.asyncio
async def test_a_form_whose_bridge_leaves_ends_as_a_tool_error_after_the_grace(
    nats_server: NatsServer, pis: tuple[PiProcess, PiProcess, Path], forwarder: Forwarder
) -> None:
    _, pi_b, _ = pis
    live: list[str] = []
    heard = asyncio.Event()

    def write(line: str) -> None:
        live.append(line)
        if json.loads(line).get("gone") == "tool:left":
            heard.set()

    watch = asyncio.create_task(
        watch_fleet(NatsOptions(nats_server.url), write=write, as_json=True)
    )
    async with bridge(nats_server.url) as fleet:
        await forwarder.wait_role("answerer", WAIT)
        await fleet.wait_pi(HOST, pi_b.pid, timeout=WAIT)
        await asyncio.to_thread(pi_b.wait_answerer, timeout=WAIT)
        async with BridgeClient(fleet.transport(HOST, pi_b.pid)) as client:
            flows = client.flows()
            since = await ask(pi_b, "left")
            await next_flow(flows, "tool:left")  # seen by the bridge, left unanswered
    left = time.monotonic()
    record = await tool_end(pi_b, "left", since, timeout=GRACE_MS / 1000 + WAIT)
    waited = time.monotonic() - left
    assert waited >= GRACE_MS / 1000 * 0.9  # the relay's grace was given
    assert record.get("isError") is True
    assert "no pi-ask client that answers forms" in json.dumps(record["result"])
    assert FlowId("tool:left") not in await asyncio.to_thread(pi_b.open_flow_ids)
    # Ended in the fleet too (the relay disposed it without a completed): a watch hears it
    # end; a fresh bridge's snapshot, a fresh watch and doctor no longer show it open.
    try:
        await asyncio.wait_for(heard.wait(), WAIT)
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    async with (
        Fleet(nats_server.url, role="observer") as fresh,
        BridgeClient(fresh.transport(HOST, pi_b.pid)) as client,
    ):
        assert FlowId("tool:left") not in client.open_flows
    lines: list[str] = []
    fresh_watch = watch_fleet(
        NatsOptions(nats_server.url), write=lines.append, as_json=True, duration=2.0
    )
    await asyncio.wait_for(fresh_watch, WAIT)
    shown = [json.loads(line) for line in lines]
    assert any(line.get("state") == "up" and line.get("pid") == pi_b.pid for line in shown)
    started = [line["data"]["flowId"] for line in shown if line.get("channel") == STARTED]
    assert "tool:left" not in started, shown
    found = await survey_fleet(NatsOptions(nats_server.url), FleetNames(), listen=0.1)
    [pi_b_found] = [pi for pi in found.hosts[HOST].pis if pi.pid == pi_b.pid]
    assert pi_b_found.open_forms == 0
