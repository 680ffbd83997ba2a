"""Replica groups on a real nats-server: replicas of one bridge (in processes of their own, or
in this one) share the forms of several hosts; one is killed (SIGKILL), one frozen (SIGSTOP)
mid-run, one closed. Every form is counted at its host: answered exactly once (lost 0, doubled
0). Every wait is bounded."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
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
from .kit import ROOT, Answerer, all_done

GROUP = "answerers"


class Replica:
    """``tests/fleet/group_replica.py`` in its own process: what it was shown and each outcome
    it printed, by flow id."""

    def __init__(self, url: str, name: str, members: int, log: Path, hold: str = "") -> None:
        module = [sys.executable, "-m", "tests.fleet.group_replica"]
        self.args = [*module, url, GROUP, name, str(members), *([hold] if hold else [])]
        self.name = name
        self.log = log
        self.ready = False
        self.closed = False  # it closed cleanly (SIGTERM: its goodbye sent)
        self.shown: set[str] = set()
        self.outcomes: dict[str, list[str]] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self._changed = asyncio.Event()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with self.log.open("ab") as stderr:
            process = subprocess.Popen(
                self.args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=stderr, env=env,
            )  # fmt: skip
        self.process = process
        loop = asyncio.get_running_loop()
        stdout = process.stdout
        assert stdout is not None

        def read() -> None:
            for raw in stdout:
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.call_soon_threadsafe(self._line, json.loads(raw))

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()

    def _line(self, line: dict[str, str]) -> None:
        if "ready" in line:
            self.ready = True
        elif "closed" in line:
            self.closed = True
        elif "shown" in line:
            self.shown.add(line["shown"])
        else:
            self.outcomes.setdefault(line["flow"], []).append(line["outcome"])
        self._changed.set()

    async def until(self, done: Callable[[], bool], timeout: float) -> None:
        async def check() -> None:
            while not done():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(check(), timeout)

    def accepted(self, flows: set[str] | None = None) -> int:
        return sum(
            v.count("accepted") for f, v in self.outcomes.items() if flows is None or f in flows
        )

    def go(self) -> None:
        """Lets its held forms be answered (a line on its stdin)."""
        assert self.process is not None
        assert self.process.stdin is not None
        self.process.stdin.write(b"go\n")
        self.process.stdin.flush()

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGCONT)
                process.kill()
            process.wait(10)
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
        if self._reader is not None:
            self._reader.join(10)
            self._reader = None


class Answered:
    """The hosts' own count: each submit-result a host's Pi emitted, ``ok`` or not, by flow."""

    def __init__(self, relays: list[FakeRelay]) -> None:
        self.ok: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.by: Counter[str] = Counter()  # accepted, by the replica (its request ids' prefix)
        for relay in relays:
            relay.bus.on(SUBMIT_RESULT, self._result)

    def _result(self, data: object) -> None:
        payload = msgspec.to_builtins(data)
        assert isinstance(payload, dict)
        (self.ok if payload.get("ok") else self.refused)[str(payload["flowId"])] += 1
        if payload.get("ok"):
            self.by[str(payload["requestId"]).partition("-")[0]] += 1


@contextlib.contextmanager
def replicas(made: list[Replica]) -> Iterator[list[Replica]]:
    try:
        yield made
    finally:
        for replica in made:
            replica.stop()


async def hosts_with_a_pi(tmp_path: Path, url: str, count: int) -> list[Host]:
    made = []
    for n in range(count):
        host = Host(tmp_path / f"relays-{n}", url, f"h{n}")
        host.directory.mkdir(mode=0o700)
        made.append(host)
        await host.start_pi()
        forwarder = await host.start_forwarder()
        await forwarder.wait_taking_submits(20)
    return made


def only_relay(host: Host) -> FakeRelay:
    (relay,) = host.relays.values()
    return relay


@pytest.mark.asyncio
async def test_three_replicas_answer_300_forms_once_through_a_kill_and_a_freeze(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Three replicas of one bridge (processes), one group, three hosts; 300 forms in three
    waves. Kills: replica r0 (SIGKILL) once it has answered some of the second wave. Freezes:
    replica r1 (SIGSTOP) once it has answered some of the third; resumed after every form has
    ended. Every form is answered exactly once, counted at its host (lost 0, doubled 0), and
    every replica answered some."""
    hosts = await hosts_with_a_pi(tmp_path, nats_server.url, 3)
    relays = [only_relay(host) for host in hosts]
    answered = Answered(relays)
    made = [Replica(nats_server.url, f"r{n}", 3, tmp_path / f"r{n}.log") for n in range(3)]
    try:
        with replicas(made) as (r0, r1, r2):
            for replica in made:
                replica.start()
            for replica in made:
                await replica.until(lambda r=replica: r.ready, 60)  # type: ignore[misc]

            def wave(tag: str) -> list[FlowHandle]:
                return [relays[n % 3].open_form(yes_no_params(), f"{tag}-{n}") for n in range(100)]

            def flows(handles: list[FlowHandle]) -> set[str]:
                return {h.flow_id for h in handles}

            first = wave("a")
            await all_done(first, 60)
            second = wave("b")
            await r0.until(lambda: r0.accepted(flows(second)) >= 5, 60)
            r0.signal(signal.SIGKILL)
            third = wave("c")
            await r1.until(lambda: r1.accepted(flows(third)) >= 5, 60)
            r1.signal(signal.SIGSTOP)
            await all_done(second + third, 90)  # r2 answers what r0 and r1 left open
            r1.signal(signal.SIGCONT)
            handles = first + second + third
            # The survivors settle: each form shown to them has its outcome.
            for replica in (r1, r2):
                await replica.until(lambda r=replica: r.shown <= set(r.outcomes), 60)  # type: ignore[misc]

            assert all(h.state == "completed" for h in handles)  # lost 0
            every = flows(handles)
            assert {f: n for f, n in answered.ok.items() if n != 1} == {}  # doubled 0
            assert set(answered.ok) == every  # each answered by a replica, once
            for handle in handles:  # no replica was told "accepted" twice for one form
                told = sum(r.outcomes.get(handle.flow_id, []).count("accepted") for r in made)
                assert told <= 1, (
                    handle.tool_call_id,
                    [r.outcomes.get(handle.flow_id) for r in made],
                )
            split = {r.name: answered.by[r.name] for r in made}  # counted at the hosts
            refused = sum(answered.refused.values())
            others = {
                r.name: Counter(o for v in r.outcomes.values() for o in v if o != "accepted")
                for r in made
            }
            print(
                f"\ngroup split (accepted per replica): {split}; refused at the hosts: {refused}; "
                f"other outcomes: {others}"
            )
            assert all(n > 0 for n in split.values()), split
    finally:
        for host in hosts:
            await host.close()


@pytest.mark.asyncio
async def test_a_frozen_replica_that_answers_late_is_refused(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Freezes: replica "rh" (SIGSTOP) while it holds a form it owns, unanswered; the other
    replica takes the form once rh's presence expired, and answers it. Resumed, rh answers the
    form too, believing it still owns it: refused, never a second answer."""
    (host,) = await hosts_with_a_pi(tmp_path, nats_server.url, 1)
    relay = only_relay(host)
    answered = Answered([relay])
    held = Replica(nats_server.url, "rh", 2, tmp_path / "rh.log", hold="hold-")
    free = Replica(nats_server.url, "rf", 2, tmp_path / "rf.log")
    try:
        with replicas([held, free]):
            held.start()
            free.start()
            await held.until(lambda: held.ready, 60)
            await free.until(lambda: free.ready, 60)
            names = FleetNames()
            call = next(
                f"hold-{n}"
                for n in range(100)
                if owner(names.flow("h0", relay.pid, f"tool:hold-{n}"), ["rf", "rh"]) == "rh"
            )
            form = relay.open_form(yes_no_params(), call)
            await held.until(lambda: form.flow_id in held.shown, 30)
            assert form.is_open
            assert form.flow_id not in free.shown
            held.signal(signal.SIGSTOP)
            await all_done([form], 30)  # rf took it over and answered it
            await free.until(lambda: form.flow_id in free.outcomes, 30)
            assert free.outcomes[form.flow_id] == ["accepted"]
            held.go()  # (read when it runs again)
            held.signal(signal.SIGCONT)
            await held.until(lambda: form.flow_id in held.outcomes, 60)
            late = held.outcomes[form.flow_id]
            print(f"\nthe frozen replica's late answer: {late}")
            # Refused by Pi (its submit went out before it read the end), or kept back by its
            # client (it read the end first): never a second answer.
            assert late in (["rejected:flow_not_found"], ["not_sent:flow_completed"]), late
            assert answered.ok[form.flow_id] == 1
    finally:
        await host.close()


@pytest.mark.asyncio
async def test_two_replicas_see_disjoint_forms_and_a_closing_one_hands_its_own_over_at_once(
    host: Host, nats_server: NatsServer
) -> None:
    """Two replicas (in this process): each is shown exactly the forms rendezvous hashing
    gives it. Closes: replica "ra", which held its forms unanswered; its goodbye hands them to
    "rb" at once (well before its presence timeout of 15 s), which answers each once."""
    relay = await host.start_pi()
    await host.start_forwarder()
    async with (
        Fleet(nats_server.url, group=GROUP, heartbeat=5.0, bridge_id="ra") as ra,
        Fleet(nats_server.url, group=GROUP, heartbeat=0.2, bridge_id="rb") as rb,
    ):
        assert await ra.wait_group(2, 10) == ("ra", "rb")
        assert await rb.wait_group(2, 10) == ("ra", "rb")
        await ra.wait_pi("h1", relay.pid)
        answered = Answered([relay])
        held = Answerer(ra, "h1", relay.pid)  # never answers: its gate stays shut
        free = Answerer(rb, "h1", relay.pid)
        free.gate.set()
        await held.start()
        await free.start()
        handles = [relay.open_form(yes_no_params(), f"f-{n}") for n in range(20)]
        names = FleetNames()
        of_ra = {
            h.flow_id
            for h in handles
            if owner(names.flow("h1", relay.pid, h.flow_id), ["ra", "rb"]) == "ra"
        }
        of_rb = {h.flow_id for h in handles} - of_ra
        await held.wait_seen(len(of_ra))
        await free.wait_outcomes(len(of_rb))
        assert set(held.seen) == of_ra
        assert set(free.seen) == of_rb
        await held.stop()
        await ra.close()  # its goodbye
        await all_done(handles, 5)
        await free.wait_outcomes(len(handles))
        assert set(free.seen) == {h.flow_id for h in handles}
        assert all(free.accepted(h.flow_id) == 1 for h in handles)
        assert {f: n for f, n in answered.ok.items() if n != 1} == {}
        assert set(answered.ok) == {h.flow_id for h in handles}
        await free.stop()
