"""What the production-shape tests share (tests/fleet/test_production_*.py): a host whose
forwarder is given the fleet's ``FleetSettings`` and its own ``NatsOptions``, the ledger that
counts every form, and moving a stream's leader to a chosen node."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client

from pi_ask_core import FlowHandle
from pi_ask_sdk import FlowView, SubmitNotSent, SubmitTimedOut
from pi_ask_sdk.fleet import Fleet, FleetSettings, NatsOptions
from pi_ask_sdk.testing.nats_server import NatsCluster
from tests.relay.fake_relay import FakeRelay

from .conftest import Host
from .kit import Answerer, submits_per_request, yes


class SettingsHost(Host):
    """A ``Host`` whose forwarder is made with ``settings`` (its streams' replicas) and
    ``options`` (all the cluster's URLs, TLS, credentials, a connection name)."""

    def __init__(
        self, directory: Path, options: NatsOptions, host_id: str, settings: FleetSettings
    ) -> None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        super().__init__(directory, options.url, host_id)
        self.options = options
        self.settings = settings


@dataclass(frozen=True)
class Ledger:
    """Every form of a fault test, counted. ``answered``: ended by one bridge submit the host
    was given; ``local``: ended by the host's user; ``lost``: still open, or ended by nobody
    (no submit reached the host, its user did not answer it); ``doubled``: accepted more than
    once, accepted though its user answered it, or one submit given to the host twice;
    ``unconfirmed``: answered, but its bridge was not told "accepted" (``SubmitLost`` or
    ``SubmitTimedOut``: "may have been applied"). ``detail`` names each form counted lost,
    doubled or unconfirmed."""

    forms: int
    answered: int
    local: int
    lost: int
    doubled: int
    unconfirmed: int
    detail: tuple[str, ...]


def count_forms(
    relay: FakeRelay, handles: list[FlowHandle], accepted: Counter[str], local: set[str]
) -> Ledger:
    """The ledger of ``handles`` (``accepted``: accepted submits per flow id, as the bridges
    were told; ``local``: the flows the host's user ended)."""
    detail: list[str] = []
    lost = doubled = answered = unconfirmed = 0
    given = submits_per_request(relay)
    for handle in handles:
        name, flow = handle.tool_call_id, handle.flow_id
        submits = sum(n for (f, _), n in given.items() if f == flow)
        if accepted[flow] > 1:
            doubled += 1
            detail.append(f"{name}: accepted {accepted[flow]} times")
        if handle.state != "completed":
            lost += 1
            detail.append(f"{name}: {handle.state}")
        elif flow in local:
            if accepted[flow]:
                doubled += 1
                detail.append(f"{name}: answered by its user and accepted from a bridge")
        elif submits == 0:
            lost += 1
            detail.append(f"{name}: completed, but no bridge's submit reached the host")
        else:
            answered += 1
            if accepted[flow] == 0:
                unconfirmed += 1
                detail.append(f"{name}: answered; its bridge was not told so")
    for key, times in given.items():
        if times > 1:
            doubled += 1
            detail.append(f"submit {key} given to the host {times} times")
    return Ledger(len(handles), answered, len(local), lost, doubled, unconfirmed, tuple(detail))


async def node_of(cluster: NatsCluster, connection: str, timeout: float = 10.0) -> int:
    """The node a client connection named ``connection`` is connected to."""

    async def find() -> int:
        while True:
            index = await asyncio.to_thread(cluster.node_of, connection)
            if index is not None:
                return index
            await asyncio.sleep(0.05)  # (a monitoring poll)

    return await asyncio.wait_for(find(), timeout)


async def move_leader(nc: Client, cluster: NatsCluster, stream: str, to: int) -> None:
    """Make node ``to`` the leader of ``stream`` (a JetStream leader step-down with that node
    preferred); returns once it leads."""
    for _ in range(5):
        if await asyncio.to_thread(cluster.stream_leader, stream) == to:
            return
        request = {"placement": {"preferred": cluster.nodes[to].name}}
        await nc.request(
            f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", json.dumps(request).encode(), timeout=10
        )
        await asyncio.to_thread(cluster.wait_stream_leader, stream, timeout=20)
    assert await asyncio.to_thread(cluster.stream_leader, stream) == to


class RetryingAnswerer(Answerer):
    """An ``Answerer`` that retries as a bridge must when a node dies with its submits in
    flight: after ``SubmitTimedOut`` (it may have been applied) with the same request id,
    after ``SubmitNotSent`` (surely not applied) with a new one. ``not_sent`` keeps each
    form's "not sent" outcomes (a false one shows as a second request id reaching the host),
    ``timed_out`` counts the timed-out ones."""

    def __init__(self, fleet: Fleet, host: str, pid: int, *, timeout: float = 8.0) -> None:
        super().__init__(fleet, host, pid)
        self.timeout = timeout
        self.not_sent: Counter[str] = Counter()
        self.timed_out = 0

    async def _answer(self, flow: FlowView) -> None:
        await self.gate.wait()
        assert self.client is not None
        request_id: str | None = None
        for _ in range(10):
            outcome = await self.client.respond(
                flow, yes(flow), timeout=self.timeout, request_id=request_id
            )
            if isinstance(outcome, SubmitTimedOut) and not outcome.acknowledged:
                self.timed_out += 1
                request_id = outcome.ticket.request_id
                continue
            if isinstance(outcome, SubmitNotSent) and outcome.reason != "flow_completed":
                self.not_sent[flow.flow_id] += 1
                request_id = None
                continue
            break
        self.outcomes.setdefault(flow.flow_id, []).append(outcome)
        self._seen_changed.set()
