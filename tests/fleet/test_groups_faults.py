"""Replica groups under faults on a real nats-server: replicas that join and leave (goodbye, or
SIGKILL) while forms keep opening, and the nats-server itself killed and restarted under a
group. Each test names what it kills and counts every form at its host: answered exactly once
(lost 0, doubled 0). Every wait is bounded."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from pi_ask_core import SUBMIT_RESULT, FlowHandle
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.fleet.groups import owner
from pi_ask_sdk.fleet.protocol import FleetNames
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer
from tests.relay.fake_relay import FakeRelay

from .conftest import Host
from .kit import Retrying, all_done, serving, submits_per_request
from .test_groups import GROUP, Replica, hosts_with_a_pi, replicas


class Ledger:
    """The hosts' own count, by form: the replicas whose submit its host accepted (each request
    id starts with its replica's name), and when (the loop's clock)."""

    def __init__(self, relays: list[FakeRelay]) -> None:
        self.accepted: dict[str, list[str]] = {}
        self.when: dict[str, float] = {}
        self.refused = 0
        for relay in relays:
            relay.bus.on(SUBMIT_RESULT, self._result)

    def _result(self, data: object) -> None:
        payload = msgspec.to_builtins(data)
        assert isinstance(payload, dict)
        if not payload.get("ok"):
            self.refused += 1
            return
        flow = str(payload["flowId"])
        self.accepted.setdefault(flow, []).append(str(payload["requestId"]).partition("-")[0])
        self.when[flow] = asyncio.get_running_loop().time()

    def by(self) -> Counter[str]:
        """Forms accepted, by replica."""
        return Counter(name for names in self.accepted.values() for name in names)

    def assert_each_once(self, handles: list[FlowHandle], relays: list[FakeRelay]) -> None:
        assert [h.tool_call_id for h in handles if h.state != "completed"] == []  # lost 0
        assert {f: v for f, v in self.accepted.items() if len(v) != 1} == {}  # doubled 0
        assert set(self.accepted) == {h.flow_id for h in handles}  # each by a replica
        for relay in relays:  # and no host was given one submit twice
            assert {k: n for k, n in submits_per_request(relay).items() if n > 1} == {}


def pis(hosts: list[Host]) -> list[tuple[Host, FakeRelay]]:
    return [(host, relay) for host in hosts for relay in host.relays.values()]


async def hosts_with_four_pis(tmp_path: Path, url: str) -> list[Host]:
    """Hosts h0 (two Pis), h1 and h2 (one each), each with its forwarder following them."""
    hosts = await hosts_with_a_pi(tmp_path, url, 3)
    second = await hosts[0].start_pi()
    await hosts[0].wait_followed(second.pid)
    return hosts


@pytest.mark.asyncio
async def test_replicas_that_join_and_leave_while_forms_open_answer_each_once(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Churn: replica processes of one group (each serving with ``serve(handler, fleet)``) join
    and leave in turn, four times each way, while forms open on four Pis of three hosts. Closes
    (SIGTERM: its goodbye): r0, then r2. Kills (SIGKILL): r1, then r3. Each leaves holding forms
    it owns unanswered (in flight), as a wave of forms opens. Every form is answered exactly
    once, counted at its host (lost 0, doubled 0); each held form by another replica; the work
    is spread over the replicas."""
    hosts = await hosts_with_four_pis(tmp_path, nats_server.url)
    targets = pis(hosts)
    ledger = Ledger([relay for _, relay in targets])
    names = FleetNames()
    handles: list[FlowHandle] = []
    held: dict[str, list[FlowHandle]] = {}  # by the replica that held them as it left
    made: list[Replica] = []

    def wave(tag: str, count: int = 12) -> None:
        for n in range(count):
            relay = targets[n % len(targets)][1]
            handles.append(relay.open_form(yes_no_params(), f"{tag}-{n}"))

    def hold_for(name: str, members: list[str], count: int = 4) -> list[FlowHandle]:
        """Forms ``name`` owns among ``members`` (every member its peers may still count):
        only it is shown them, and it holds them unanswered."""
        mine: list[FlowHandle] = []
        n = 0
        while len(mine) < count:
            host, relay = targets[n % len(targets)]
            call = f"hold-{name}-{n}"
            if owner(names.flow(host.host_id, relay.pid, f"tool:{call}"), members) == name:
                mine.append(relay.open_form(yes_no_params(), call))
            n += 1
        handles.extend(mine)
        return mine

    def replica(name: str, members: int, *, hold: bool) -> Replica:
        """A replica process that holds its "hold-<name>-" forms (unless ``hold`` is false)."""
        made.append(
            Replica(
                nats_server.url,
                name,
                members,
                tmp_path / f"{name}.log",
                f"hold-{name}-" if hold else "",
            )
        )
        return made[-1]

    async def turn(leaving: Replica, how: signal.Signals, joining: Replica) -> None:
        """``leaving`` leaves holding forms it owns, as ``joining`` joins and forms open."""
        mine = held[leaving.name] = hold_for(leaving.name, [r.name for r in made])
        await leaving.until(lambda: {h.flow_id for h in mine} <= leaving.shown, 30)
        leaving.signal(how)
        joining.start()
        wave(f"turn-{leaving.name}")
        if how is signal.SIGTERM:  # a clean close: its goodbye sent, exit status 0
            await leaving.until(lambda: leaving.closed, 30)
            assert leaving.process is not None
            assert await asyncio.to_thread(leaving.process.wait, 10) == 0
        await joining.until(lambda: joining.ready, 60)
        wave(f"after-{leaving.name}")

    try:
        with replicas(made):
            r0, r1, r2 = (replica(f"r{n}", 3, hold=True) for n in range(3))
            for started in (r0, r1, r2):
                started.start()
            for started in (r0, r1, r2):
                await started.until(lambda r=started: r.ready, 60)  # type: ignore[misc]
            wave("start")
            await turn(r0, signal.SIGTERM, r3 := replica("r3", 3, hold=True))
            await turn(r1, signal.SIGKILL, r4 := replica("r4", 3, hold=False))
            await turn(r2, signal.SIGTERM, r5 := replica("r5", 3, hold=False))
            await turn(r3, signal.SIGKILL, r6 := replica("r6", 3, hold=False))
            survivors = (r4, r5, r6)

            await all_done(handles, 60)  # the survivors answer what the others left open
            for survivor in survivors:  # they settle: each form shown to them has its outcome
                await survivor.until(lambda r=survivor: r.shown <= set(r.outcomes), 60)  # type: ignore[misc]

            ledger.assert_each_once(handles, [relay for _, relay in targets])
            for name, mine in held.items():  # held as it left: answered by another replica
                assert all(ledger.accepted[h.flow_id] != [name] for h in mine), name
            for handle in handles:  # no replica was told "accepted" but its host's
                told = [r.name for r in made if "accepted" in r.outcomes.get(handle.flow_id, [])]
                assert told in ([], ledger.accepted[handle.flow_id]), (handle.tool_call_id, told)
            split = ledger.by()
            print(
                f"\nchurn: {len(handles)} forms; accepted per replica: "
                f"{dict(sorted(split.items()))}; refused at the hosts: {ledger.refused}"
            )
            assert len(split) > 1, split  # the work was spread
            for survivor in survivors:  # those that joined took a share
                assert split[survivor.name] > 0, split
    finally:
        for host in hosts:
            await host.close()


class InProcess(Retrying):
    """One replica in this process: ``serve(handler, fleet)`` answers every form it is shown
    (``Retrying``, under request ids of its own: its name, then the tool call id); forms whose
    tool call id starts with "held-" wait for ``gate``."""

    def __init__(self, fleet: Fleet, gate: asyncio.Event, changed: asyncio.Event) -> None:
        super().__init__(
            fleet.bridge_id,
            gate=gate,
            changed=changed,
            waits=lambda flow: (flow.tool_call_id or "").startswith("held-"),
        )
        self.fleet = fleet
        self.name = fleet.bridge_id


HEARTBEAT = 0.5
"""The replicas' heartbeat interval (s): their presence timeout is 1.5 s, a margin over their
reconnections after a restart (each at most 0.25 s apart, and one heartbeat)."""


OUTAGE = 2.5
"""Seconds the nats-server stays down: past the replicas' presence timeout (every member,
itself included, falls silent), within the forwarders' timeout (10 s)."""


@pytest.mark.asyncio
async def test_the_nats_server_killed_and_restarted_under_a_group(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Kills: the nats-server (SIGKILL) while a group of two replicas (in this process, serving
    with ``serve(handler, fleet)``) serves four Pis of three hosts: some forms shown and held
    unanswered, a wave just opened; restarts it on the same port and store after ``OUTAGE``
    seconds. Meanwhile the held forms are answered (their submits sent while it is down) and
    more forms open; more open as it comes back. Every form, opened before, during and after,
    is answered exactly once, counted at its host (lost 0, doubled 0); those opened while it
    was down are answered after it is back; both replicas answered some, and the group is whole
    again."""
    hosts = await hosts_with_four_pis(tmp_path, nats_server.url)
    targets = pis(hosts)
    relays = [relay for _, relay in targets]
    ledger = Ledger(relays)
    loop = asyncio.get_running_loop()

    def wave(tag: str, count: int) -> list[FlowHandle]:
        return [
            targets[n % len(targets)][1].open_form(yes_no_params(), f"{tag}-{n}")
            for n in range(count)
        ]

    names = FleetNames()

    def held_by(name: str, count: int) -> list[FlowHandle]:
        """``count`` forms that replica ``name`` owns (held unanswered until ``gate``)."""
        mine: list[FlowHandle] = []
        n = 0
        while len(mine) < count:
            host, relay = targets[n % len(targets)]
            call = f"held-{name}-{n}"
            if owner(names.flow(host.host_id, relay.pid, f"tool:{call}"), ["ra", "rb"]) == name:
                mine.append(relay.open_form(yes_no_params(), call))
            n += 1
        return mine

    gate = asyncio.Event()
    shown = asyncio.Event()
    try:
        async with (
            Fleet(nats_server.url, group=GROUP, heartbeat=HEARTBEAT, bridge_id="ra") as ra,
            Fleet(nats_server.url, group=GROUP, heartbeat=HEARTBEAT, bridge_id="rb") as rb,
        ):
            assert await ra.wait_group(2, 10) == ("ra", "rb")
            assert await rb.wait_group(2, 10) == ("ra", "rb")
            group = [InProcess(ra, gate, shown), InProcess(rb, gate, shown)]
            async with serving(*((r, r.fleet) for r in group)):
                before = wave("before", 24)
                held = held_by("ra", 4) + held_by("rb", 4)
                await all_done(before, 30)

                async def all_held_shown() -> None:
                    while not {h.flow_id for h in held} <= set().union(*(r.shown for r in group)):
                        shown.clear()
                        await shown.wait()

                await asyncio.wait_for(all_held_shown(), 30)
                assert all(h.is_open for h in held)
                for replica in group:  # each was shown its own, and holds them unanswered
                    own = {h.flow_id for h in held if f"-{replica.name}-" in (h.tool_call_id or "")}
                    assert own <= replica.shown
                in_flight = wave("flight", 12)  # on their way as the server dies

                nats_server.kill()
                gate.set()  # the held forms are answered while it is down
                during = wave("during", 12)
                # Time is the thing: the server stays down past every presence timeout.
                await asyncio.sleep(OUTAGE)
                await asyncio.to_thread(nats_server.start)  # same port, same store
                back = loop.time()
                after = wave("after", 12)

                handles = before + held + in_flight + during + after
                await all_done(handles, 60)
                for replica in group:
                    await replica.settled(60)
                ledger.assert_each_once(handles, relays)
                assert all(ledger.when[h.flow_id] > back for h in during)  # once it is back
                # Each form was shown to one replica only: both were alive throughout, and
                # neither took the other's forms for its own silence.
                assert group[0].shown & group[1].shown == set()
                for handle in handles:  # no replica was told "accepted" but the host's
                    told = [r.name for r in group if r.accepted(handle.flow_id)]
                    assert told in ([], ledger.accepted[handle.flow_id]), (
                        handle.tool_call_id,
                        told,
                    )
                    assert all(r.accepted(handle.flow_id) <= 1 for r in group)
                split = ledger.by()
                print(
                    f"\nserver restart: {len(handles)} forms; accepted per replica: "
                    f"{dict(split)}; refused at the hosts: {ledger.refused}"
                )
                assert split["ra"] > 0, split
                assert split["rb"] > 0, split
                assert await ra.wait_group(2, 10) == ("ra", "rb")  # the group is whole again
                assert await rb.wait_group(2, 10) == ("ra", "rb")
    finally:
        for host in hosts:
            await host.close()
