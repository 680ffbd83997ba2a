"""The fleet on a 3-node nats-server cluster with its streams at 3 replicas
(``FleetSettings(replicas=3)``), forwarders and bridges given all three URLs. Each fault test
names the node it kills and counts every form: lost 0, doubled 0. Every wait is bounded."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from nats.aio.client import Client

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.cli.watch_fleet import watch_fleet
from pi_ask_sdk.fleet import Fleet, FleetNames, FleetPi, FleetSettings, NatsOptions
from pi_ask_sdk.fleet.connection import connect_nats
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsCluster, nats_cluster

from .kit import Answerer, all_done, local_no, submits_per_request, yes
from .production import RetryingAnswerer, SettingsHost, count_forms, move_leader, node_of

NAMES = FleetNames()
SETTINGS = FleetSettings(replicas=3)
FORWARDER, BRIDGE = "forwarder-h1", "bridge-1"
PING = 0.5
"""The bridge's and the forwarder's ping interval (NatsOptions: 1 s): a frozen node is noticed
within ``PING * (max_outstanding_pings + 1)`` = 2 s, well inside ``forwarder_timeout`` (10 s)
with the fail-over and a stream's leader election after it, on a loaded machine too (at 1 s,
two runs of fifteen with other work on the machine took past 10 s: the bridge counted the live
forwarder gone and ended its transport)."""
STREAMS = [str(config.name) for config in SETTINGS.streams(NAMES)]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    with nats_cluster(tmp_path / "cluster") as started:
        yield started


@pytest_asyncio.fixture
async def admin(cluster: NatsCluster) -> AsyncIterator[Client]:
    """A plain connection, to look at the streams and move their leaders."""
    nc = await connect_nats(NatsOptions(cluster.url, name="admin"))
    yield nc
    await nc.close()


@pytest_asyncio.fixture
async def fleet(cluster: NatsCluster) -> AsyncIterator[Fleet]:
    """The answering bridge's fleet connection, given every node's URL."""
    options = NatsOptions(cluster.url, name=BRIDGE, ping_interval=PING)
    async with Fleet(options, settings=SETTINGS, heartbeat=0.2, idle_heartbeat=0.5) as connected:
        yield connected


@pytest_asyncio.fixture
async def host(tmp_path: Path, cluster: NatsCluster) -> AsyncIterator[SettingsHost]:
    made = SettingsHost(
        tmp_path / "relays",
        NatsOptions(cluster.url, name=FORWARDER, ping_interval=PING),
        "h1",
        SETTINGS,
    )
    yield made
    await made.close()


@pytest.mark.asyncio
async def test_the_streams_have_three_replicas(
    cluster: NatsCluster, fleet: Fleet, host: SettingsHost, admin: Client
) -> None:
    """Every stream the bridge and the forwarder set up lives on all three nodes."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    js = admin.jetstream()
    for config in SETTINGS.streams(NAMES):
        assert config.name is not None
        info = await js.stream_info(config.name)
        assert info.config.num_replicas == 3, config.name
        assert info.cluster is not None
        assert info.cluster.leader is not None
        assert len(info.cluster.replicas or []) == 2, config.name


@pytest.mark.asyncio
async def test_a_forwarder_with_default_settings_keeps_three_replicas(
    tmp_path: Path, cluster: NatsCluster, fleet: Fleet, admin: Client
) -> None:
    """A forwarder started without the fleet's settings (``pi-ask forward`` has no replicas
    option) must not scale the fleet's streams down to one replica: one node lost would then
    lose a stream."""
    plain = SettingsHost(
        tmp_path / "plain", NatsOptions(cluster.url, name="plain"), "h2", FleetSettings()
    )
    try:
        relay = await plain.start_pi()
        await plain.start_forwarder()
        await fleet.wait_pi("h2", relay.pid)
        js = admin.jetstream()
        replicas = {
            str(config.name): (await js.stream_info(str(config.name))).config.num_replicas
            for config in SETTINGS.streams(NAMES)
        }
        assert replicas == {str(c.name): 3 for c in SETTINGS.streams(NAMES)}
    finally:
        await plain.close()


@pytest.mark.asyncio
async def test_the_flows_leader_killed_mid_form(
    cluster: NatsCluster, fleet: Fleet, host: SettingsHost, admin: Client
) -> None:
    """Kills: the node that leads the flows stream (SIGKILL), made the node the forwarder is
    connected to and the leader of every stream of the fleet, while five forms wait for the
    bridge; meanwhile the host opens five more and its user answers one itself. The forwarder
    fails over to another node, the streams' leadership moves, and the bridge answers every
    form once."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    victim = await node_of(cluster, FORWARDER)
    for stream in STREAMS:
        await move_leader(admin, cluster, stream, victim)
    bridge = Answerer(fleet, "h1", relay.pid)
    await bridge.start()
    before = [relay.open_form(yes_no_params(), f"before-{n}") for n in range(5)]
    await bridge.wait_seen(5)

    cluster.kill(victim)
    during = [relay.open_form(yes_no_params(), f"during-{n}") for n in range(5)]
    before[0].complete(local_no())
    leader = await asyncio.to_thread(
        cluster.wait_stream_leader, NAMES.flows_stream, other_than=victim
    )
    assert leader != victim

    await bridge.wait_seen(10, timeout=60)
    bridge.gate.set()
    handles = before + during
    await all_done(handles, 60)
    await bridge.wait_outcomes(10, 60)
    accepted = Counter({h.flow_id: bridge.accepted(h.flow_id) for h in handles})
    ledger = count_forms(relay, handles, accepted, {before[0].flow_id})
    assert (ledger.lost, ledger.doubled, ledger.unconfirmed) == (0, 0, 0), ledger.detail
    assert (ledger.forms, ledger.answered, ledger.local) == (10, 9, 1)
    assert await node_of(cluster, FORWARDER) != victim
    await bridge.stop()


@pytest.mark.asyncio
async def test_the_flows_leader_killed_with_submits_in_flight(
    cluster: NatsCluster, fleet: Fleet, host: SettingsHost, admin: Client
) -> None:
    """Kills: the node that leads the flows stream (SIGKILL), made the node the bridge is
    connected to and the leader of every stream of the fleet, the moment the bridge sends its
    submits for twenty open forms. A submit is one core request to the forwarder (no stream on
    its way): those lost with the node are ``SubmitTimedOut`` (never "not sent": the bridge
    cannot know), and the bridge retries each with the same request id once it has failed over.
    Each form is answered once, and every bridge is told "accepted"."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    victim = await node_of(cluster, BRIDGE)
    for stream in STREAMS:
        await move_leader(admin, cluster, stream, victim)
    bridge = RetryingAnswerer(fleet, "h1", relay.pid)
    await bridge.start()
    handles = [relay.open_form(yes_no_params(), f"inflight-{n}") for n in range(20)]
    await bridge.wait_seen(20)

    bridge.gate.set()
    await asyncio.sleep(0)  # one step: the answers' tasks start sending their submits
    cluster.kill(victim)
    assert not submits_per_request(relay)  # in flight: none has reached the host yet

    await all_done(handles, 60)
    await bridge.wait_outcomes(20, 60)
    accepted = Counter({h.flow_id: bridge.accepted(h.flow_id) for h in handles})
    ledger = count_forms(relay, handles, accepted, set())
    assert (ledger.lost, ledger.doubled, ledger.unconfirmed) == (0, 0, 0), ledger.detail
    assert ledger.answered == 20
    # A false "not sent" would have let a second request id reach the host for its form.
    given = submits_per_request(relay)
    for handle in handles:
        ids = {rid for (flow, rid) in given if flow == handle.flow_id}
        assert len(ids) == 1, (handle.tool_call_id, ids, bridge.not_sent[handle.flow_id])
    assert await node_of(cluster, BRIDGE) != victim
    await bridge.stop()


@pytest.mark.asyncio
async def test_a_killed_node_comes_back_and_another_dies(
    cluster: NatsCluster, fleet: Fleet, host: SettingsHost
) -> None:
    """Kills: the flows stream's leader (SIGKILL) with forms open; restarts it on its store;
    then kills the new leader while more forms open. Two of three nodes stay up throughout
    the second fault, so the streams keep a quorum; every form is answered once."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    bridge = Answerer(fleet, "h1", relay.pid)
    bridge.gate.set()
    await bridge.start()
    first = await asyncio.to_thread(cluster.wait_stream_leader, NAMES.flows_stream)
    handles = [relay.open_form(yes_no_params(), f"one-{n}") for n in range(5)]
    cluster.kill(first)
    await all_done(handles, 60)
    await asyncio.to_thread(cluster.start_node, first)
    second = await asyncio.to_thread(cluster.wait_stream_leader, NAMES.flows_stream)
    more = [relay.open_form(yes_no_params(), f"two-{n}") for n in range(5)]
    cluster.kill(second)
    handles += more
    await all_done(handles, 60)
    await bridge.wait_outcomes(10, 60)
    accepted = Counter({h.flow_id: bridge.accepted(h.flow_id) for h in handles})
    ledger = count_forms(relay, handles, accepted, set())
    assert (ledger.lost, ledger.doubled, ledger.unconfirmed) == (0, 0, 0), ledger.detail
    assert ledger.answered == 10
    await bridge.stop()


@pytest.mark.asyncio
async def test_a_frozen_node_is_left_for_another(
    cluster: NatsCluster, fleet: Fleet, host: SettingsHost, admin: Client
) -> None:
    """Pauses: the node the forwarder is connected to, made the leader of every stream
    (SIGSTOP, as a frozen VM: its sockets stay open, it answers nothing), while five forms
    wait for the bridge and five more open. The forwarder notices within a bounded time (its
    pings, ``NatsOptions.ping_interval``: about 2 s with ``PING``) and fails over, before the
    bridges count it gone; submits sent to it meanwhile are lost with the node
    (``SubmitTimedOut``) and the bridge retries them with the same request id. Every form is
    answered once."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    victim = await node_of(cluster, FORWARDER)
    for stream in STREAMS:
        await move_leader(admin, cluster, stream, victim)
    bridge = RetryingAnswerer(fleet, "h1", relay.pid)
    await bridge.start()
    before = [relay.open_form(yes_no_params(), f"before-{n}") for n in range(5)]
    await bridge.wait_seen(5)

    cluster.pause(victim)
    try:
        during = [relay.open_form(yes_no_params(), f"during-{n}") for n in range(5)]
        bridge.gate.set()
        handles = before + during
        await all_done(handles, 45)
        await bridge.wait_outcomes(10, 45)
    finally:
        cluster.resume(victim)
    accepted = Counter({h.flow_id: bridge.accepted(h.flow_id) for h in handles})
    ledger = count_forms(relay, handles, accepted, set())
    assert (ledger.lost, ledger.doubled, ledger.unconfirmed) == (0, 0, 0), ledger.detail
    assert ledger.answered == 10
    await bridge.stop()


@pytest.mark.asyncio
async def test_the_cluster_without_a_quorum_and_back(
    cluster: NatsCluster, fleet: Fleet, host: SettingsHost
) -> None:
    """Kills: the node that leads the flows stream and another (SIGKILL), so JetStream has
    no quorum for longer than ``forwarder_timeout``, while three forms open; one node restarts
    on its store. The bridge hears the forwarder's heartbeats all along (their core subject):
    it never reports the live forwarder gone, nor does ``pi-ask watch --nats`` (the same
    liveness); ``serve(handler, fleet)`` answers every form once."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    accepted: Counter[str] = Counter()
    outcomes: dict[str, list[str]] = {}

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        async for flow in client.flows():
            outcome = await client.respond(flow, yes(flow), timeout=30)
            outcomes.setdefault(flow.tool_call_id or "", []).append(outcome.kind)
            if isinstance(outcome, SubmitAccepted):
                accepted[flow.flow_id] += 1

    changes: list[tuple[str, bool]] = []
    unwatch = fleet.watch_forwarders(lambda host, alive: changes.append((host, alive)))
    watched: list[str] = []
    watch = asyncio.get_running_loop().create_task(
        watch_fleet(
            NatsOptions(cluster.url, name="watch"),
            write=watched.append,
            as_json=True,
            forwarder_timeout=SETTINGS.forwarder_timeout,
        )
    )
    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(serve(handler, fleet, stop=stop))
    try:
        before = [relay.open_form(yes_no_params(), f"before-{n}") for n in range(3)]
        await all_done(before, 30)
        leader = await asyncio.to_thread(cluster.wait_stream_leader, NAMES.flows_stream)
        other = (leader + 1) % 3
        cluster.kill(leader)
        cluster.kill(other)
        during = [relay.open_form(yes_no_params(), f"during-{n}") for n in range(3)]
        # The outage outlasts forwarder_timeout (the fault's length, not a synchronisation).
        await asyncio.sleep(SETTINGS.forwarder_timeout + 2)
        await asyncio.to_thread(cluster.start_node, other)
        handles = before + during
        try:
            await all_done(handles, 60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the bridge's outcomes: {outcomes}") from None
    finally:
        unwatch()
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(watch, 30)
        stop.set()
        await asyncio.wait_for(serving, 30)
    assert changes == [], "the live forwarder was reported gone"
    gone = [line for line in watched if '"forwarder"' in line]
    assert gone == [], f"pi-ask watch reported the live forwarder gone: {gone}"
    ledger = count_forms(relay, handles, accepted, set())
    assert (ledger.lost, ledger.doubled) == (0, 0), (ledger.detail, outcomes)
    assert ledger.answered == 6, (ledger.detail, outcomes)
