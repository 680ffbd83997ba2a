"""Benchmark of the fleet over NATS: a real Pi's round trip, one bridge's forms/s, 50 hosts under
load, a replica group, CPU per form, forwarder memory.

Run: ``python bench/fleet.py`` (``--quick`` for a short run; ``--smoke`` a short run that
prints the verdicts but exits 0 on a miss, as CI runs it). Needs nats-py and nats-server
(``pip install 'pi-ask-sdk[nats-test]'``) and Pi 1.6.0 (``bash scripts/install-pi.sh``; found in
``$PI_ASK_PI_CACHE`` if set, else in tests/integration where that script puts it). A real
``nats-server -js`` with its store on disk (file storage, the fleet's default) runs on
127.0.0.1; every side is a process of its own (``bench/fleet_workers.py``), GC on everywhere.
CPU times are each process's time on a CPU (all its threads, from ``/proc``), read by this
process around the measured part only. One run prints:

* **round trip with a real Pi**: a real Pi 1.6.0 with the relay loaded (and the stand-in host,
  whose decisions a thread of this process makes, as in bench/relay.py); one forwarder follows
  its relay directory. The fleet side times what a bridge's call does: build the answer and
  ``await client.respond(flow, answer)`` through ``BridgeClient`` over ``NatsTransport``
  (bridge -> NATS -> forwarder -> relay -> Pi -> back). Each submit is refused as
  ``invalid_answer``, so the form stays open and every submit meets the same state (the forms
  are opened beforehand, untimed). The floor, measured in the same run, is the two parts of
  the fleet's path without the forwarder, in turn, timed in one loop by one process: a raw
  NATS request/reply with a submit-sized body (nats-py's ``request`` against a responder
  process), then the SDK's own round trip over the relay alone to the same Pi
  (``BridgeClient`` over ``RelayTransport``, the same submits). So the floor has the fleet's
  hops and process wake-ups (two NATS legs, two relay legs, five processes each waiting for
  the others between its turns), and the difference is the fleet's own work. Each part is
  also timed alone, back to back, and printed beside it (not the floor: a part alone keeps its
  two or three processes busy and hot, which no process of the fleet's path is, so its CPU
  per submit and its round trip are lower than inside any chain). Each side runs alone (its
  own processes, started for it: no forwarder is connected while the floor measures), the
  sides take turns over several rounds in alternating order, each after an untimed warm-up.
  Targets: p50 <= 1.5x and p99 <= 2x the floor. Beside it, where the time goes: the CPU time
  per submit of every process on each side's path, and the hops of one more fleet round (not
  in the figures above) watched by a tap (a plain NATS protocol reader subscribed to the Pi's
  submit subject and the reply inboxes, and a silent client of the relay socket) that notes,
  on the monotonic clock all processes share, when each submit passes NATS, when the relay sends its
  submit-result, and when the reply passes NATS: each hop's p50 (approximate: the tap is one
  more process on the same CPUs; a submit in which it saw a mark late is left out).
* **one bridge, closed loop**: ``HOSTS`` simulated hosts, each a ``FakeRelay`` (tests/relay: a
  real ``pi_ask_core.FlowHost`` behind a real relay socket, speaking the relay's protocol) in
  one process; their ``HOSTS`` forwarders (each its own NATS connection) in another; ONE
  bridge (``Fleet`` serving every Pi, a handler answering each form with an explicit value) in
  a third. ``CLOSED_INFLIGHT`` forms open at any time, a new one opened as one completes; forms
  per second, and each process's CPU time per form. Target: >= 2,000 forms/s. Every
  process of the loop shares this machine's CPUs, so it also prints the ceiling their CPU per
  form sets (CPUs / the sum), and the rate the bridge's own CPU per form allows on one CPU.
* **50 hosts, open loop**: the same fleet; forms opened at ``LOAD_RATE_TARGET`` per second,
  round robin over the hosts (open loop: a slow fleet cannot slow the arrivals down), each
  timed from ``FlowHost.start`` to its ``completed`` at the host. Sustained: every form
  answered, and the answers kept up (the last came within 1 s of the last opening). Targets:
  1,000 forms/s sustained with p99 <= 50 ms.
* **a replica group**: the same hosts (``GROUP_HOSTS`` of them), bridges in one replica group
  (``Fleet(url, group=...)``), each a process, each working on at most ``GROUP_CAPACITY``
  forms at once (over all its Pis), ``GROUP_THINK_S`` each (a bridge's own work: asking a
  model or a person; on 2 cores a CPU-bound handler would measure the machine, not the
  sharing); forms per second with ``GROUP_INFLIGHT`` open, one replica then three. Target:
  three answer >= 2.5x one's forms/s.
* **forwarder memory**: one forwarder in a process of its own, one relay, one bridge;
  ``WARM_FORMS`` forms, then RSS, gc-tracked objects and the bytes tracemalloc traces (tracing
  since the process started) before and after ``MEMORY_FORMS`` more. Targets (flat): RSS grows
  <= ``RSS_TARGET_KIB`` KiB (2 MiB: allocator noise, not a leak; a leak of 200 bytes a form
  would be 2 MiB here), and the traced bytes grow <= ``TRACED_TARGET_B_PER_FORM`` bytes per
  form (one leaked small object per form is 50 or more).

Exit status 1 names every missed target.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from pi_ask_core import SubmitEvent  # noqa: E402
from pi_ask_sdk.testing.nats_server import NatsServer  # noqa: E402
from pi_ask_sdk.testing.realpi import (  # noqa: E402
    PiEnv,
    PiNotInstalled,
    locate_pi,
    make_private_dir,
    running_pi,
    single_question,
)

WORKERS = Path(__file__).resolve().parent / "fleet_workers.py"
EMIT = b'{"type":"emit","channel":"pi-agent-ask:submit","data":'
PI_DIR = ROOT / "tests" / "integration"
PI_HOST = "bench-pi"

RTT_P50_TARGET = 1.5
RTT_P99_TARGET = 2.0
CLOSED_RATE_TARGET = 2000.0
LOAD_RATE_TARGET = 1000.0
LOAD_P99_TARGET_MS = 50.0
GROUP_TARGET = 2.5
RSS_TARGET_KIB = 2048.0
TRACED_TARGET_B_PER_FORM = 16.0
RT_FORMS = 10
HOSTS = 50
CLOSED_INFLIGHT = 200
GROUP_HOSTS = 10
GROUP_INFLIGHT = 100
GROUP_REPLICAS = 3
GROUP_THINK_S = 0.1
GROUP_CAPACITY = 10
WARM_FORMS = 10_000
"""Untimed forms before the memory is measured: more than twice the answered submits a
forwarder keeps for repeats (4,096), so what it keeps by design (its entries, and its dict's
table once churning entries made it resize) is in the baseline and only growth beyond it
shows."""
MEMORY_FORMS = 10_000


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def summed(a: list[float], b: list[float], points: int = 400) -> list[float]:
    """Every pair of ``points`` evenly spaced quantiles of ``a`` and of ``b``, summed: the
    distribution of one ``a`` then one ``b``, taken independently."""
    qa = [percentile(a, i / (points - 1)) for i in range(points)]
    qb = [percentile(b, i / (points - 1)) for i in range(points)]
    return [x + y for x in qa for y in qb]


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def cpu_seconds(pid: int) -> float:
    """Process ``pid``'s CPU time so far, all its threads (``/proc/<pid>/task/*/schedstat``: in
    nanoseconds, where ``/proc/<pid>/stat`` counts clock ticks of 10 ms)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that ended
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


class Cpu:
    """The CPU time of named processes from now on: ``per(count)`` in microseconds each."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def per(self, count: int) -> dict[str, float]:
        return {
            name: (cpu_seconds(pid) - self.start[name]) * 1e6 / max(1, count)
            for name, pid in self.pids.items()
        }


class Worker:
    """A process of bench/fleet_workers.py: JSON lines out, JSON commands in; bounded reads."""

    def __init__(self, role: str, job: dict[str, Any]) -> None:
        self.role = role
        self.process = subprocess.Popen(
            [sys.executable, str(WORKERS), role, json.dumps(job)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        self.pid = self.process.pid
        self._buffer = b""

    def read(self, timeout: float = 120.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"the {self.role} worker said nothing in {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self.process.wait(10)
                raise RuntimeError(f"the {self.role} worker ended:\n{self.stderr()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def ask(self, command: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        self.send(command)
        return self.read(timeout)

    def stderr(self) -> str:
        if self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")[-4000:]

    def stop(self, timeout: float = 30.0) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            try:
                self.process.stdin.close()  # end of input: stop
                self.process.wait(timeout)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.process.kill()
                self.process.wait(10)
        if self.process.returncode not in (0, None):
            raise RuntimeError(
                f"the {self.role} worker failed (exit status {self.process.returncode}):\n"
                f"{self.stderr()}"
            )


@contextlib.contextmanager
def workers() -> Iterator[list[Worker]]:
    """Workers started inside are stopped on the way out, the last started first; on a failure
    inside, the first failure is the one raised."""
    started: list[Worker] = []
    try:
        yield started
    except BaseException:
        for worker in reversed(started):
            with contextlib.suppress(Exception):
                worker.stop()
        raise
    for worker in reversed(started):
        worker.stop()


def start(pool: list[Worker], role: str, job: dict[str, Any]) -> Worker:
    worker = Worker(role, job)
    pool.append(worker)
    return worker


# --- round trip with a real Pi -------------------------------------------------------------------


class Side:
    """One side's timed round trips (seconds) and its processes' CPU per round trip (us)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.cpu: dict[str, list[float]] = {}

    def add(self, samples: list[float], cpu: dict[str, float]) -> None:
        self.samples += samples
        for name, us in cpu.items():
            self.cpu.setdefault(name, []).append(us)

    def ms(self, q: float) -> float:
        return percentile(self.samples, q) * 1e3

    def cpu_line(self) -> str:
        return ", ".join(f"{name} {statistics.mean(us):.0f}" for name, us in self.cpu.items())


def timed(worker: Worker, pids: dict[str, int]) -> tuple[list[float], dict[str, float]]:
    """A timed worker's round trips, and the CPU per round trip of ``pids`` meanwhile."""
    worker.read(300)  # warmed up
    cpu = Cpu(pids)
    worker.send({"command": "go"})
    result = worker.read(300)
    samples = [float(s) for s in result["samples"]]
    return samples, cpu.per(len(samples))


def submit_size(flow_id: str) -> int:
    """The bytes of one of the timed submits as the relay gets it (a submit-sized body)."""
    response: Any = {"kind": "answer", "mode": "submit", "answers": {"q": {"values": ["nope"]}}}
    rid = f"bridge-{os.urandom(16).hex()}"  # as long as the client's default request ids
    event = SubmitEvent(request_id=rid, flow_id=flow_id, response=response)
    return len(EMIT + msgspec.json.encode(event) + b"}\n")


HOPS = (
    "bridge -> NATS -> the submit on NATS",
    "-> forwarder -> relay -> Pi -> the relay's submit-result",
    "-> forwarder -> the reply on NATS",
    "-> NATS -> the bridge has the outcome",
)


def segments(
    starts: list[float], samples: list[float], events: list[tuple[str, float]]
) -> list[list[float]]:
    """Each timed submit cut where the tap saw, inside it, its ``request``, then the relay's
    ``result``, then its ``reply`` (``HOPS``; seconds). A submit in which the tap saw one of
    them late (after the bridge had its outcome: the tap is a process like the others, and
    may be off a CPU when the bytes come) is left out; how many were kept is printed."""
    events.sort(key=lambda event: event[1])
    times = [t for _, t in events]
    out: list[list[float]] = [[], [], [], []]
    for begun, took in zip(starts, samples, strict=True):
        ended = begun + took
        marks = [begun]
        wanted = ["request", "result", "reply"]
        for kind, at in events[
            bisect.bisect_left(times, begun) : bisect.bisect_right(times, ended)
        ]:
            if wanted and kind == wanted[0]:  # (a reply of the submit before, seen late: skipped)
                marks.append(at)
                wanted.pop(0)
        if not wanted:
            marks.append(ended)
            for n in range(4):
                out[n].append(marks[n + 1] - marks[n])
    return out


def find_pi() -> PiEnv:
    """Pi 1.6.0 from ``$PI_ASK_PI_CACHE``, else from tests/integration (scripts/install-pi.sh)."""
    cache = os.environ.get("PI_ASK_PI_CACHE")
    return locate_pi("current", Path(cache) if cache else PI_DIR)


def round_trip(
    env: PiEnv, server: NatsServer, base: Path, rounds: int, count: int, warm: int
) -> tuple[PiEnv, dict[str, Side], int, list[list[float]]]:
    relays = make_private_dir(base / "rt-relays")
    url = server.url
    assert server.process is not None
    broker = server.process.pid
    sides = {name: Side() for name in ("fleet", "chain", "nats", "relay")}
    with running_pi(env, base / "rt-pi", relay_dir=relays, shared_tmp=base / "pitmp") as pi:
        ids = [pi.open_form(single_question()) for _ in range(RT_FORMS)]
        size = submit_size(ids[0])
        job = {"forms": ids, "warm": warm, "count": count}
        here = os.getpid()  # the stand-in host's thread
        for n in range(rounds):
            order = list(sides)
            for side in order if n % 2 == 0 else order[::-1]:
                with workers() as pool:
                    if side == "fleet":
                        forwarder = start(
                            pool, "forwarders", {"url": url, "hosts": {PI_HOST: str(relays)}}
                        )
                        forwarder.read()
                        timer = start(
                            pool, "rtt", {**job, "url": url, "host": PI_HOST, "pid": pi.pid}
                        )
                        pids = {
                            "bridge": timer.pid,
                            "forwarder": forwarder.pid,
                            "nats-server": broker,
                            "Pi": pi.pid,
                            "stand-in": here,
                        }
                    elif side == "chain":
                        echo = start(pool, "echo", {"url": url})
                        echo.read()
                        chain_job = {**job, "url": url, "size": size, "socket": str(pi.socket_path)}
                        timer = start(pool, "chain", chain_job)
                        pids = {
                            "bridge": timer.pid,
                            "responder": echo.pid,
                            "nats-server": broker,
                            "Pi": pi.pid,
                            "stand-in": here,
                        }
                    elif side == "nats":
                        echo = start(pool, "echo", {"url": url})
                        echo.read()
                        timer = start(pool, "nats", {**job, "url": url, "size": size})
                        pids = {
                            "requester": timer.pid,
                            "responder": echo.pid,
                            "nats-server": broker,
                        }
                    else:
                        timer = start(pool, "relay", {**job, "socket": str(pi.socket_path)})
                        pids = {"bridge": timer.pid, "Pi": pi.pid, "stand-in": here}
                    sides[side].add(*timed(timer, pids))
        with workers() as pool:
            forwarder = start(pool, "forwarders", {"url": url, "hosts": {PI_HOST: str(relays)}})
            forwarder.read()
            tap_job = {"url": url, "socket": str(pi.socket_path), "host": PI_HOST, "pid": pi.pid}
            tap = start(pool, "tap", tap_job)
            tap.read()
            bridge = start(pool, "rtt", {**job, "url": url, "host": PI_HOST, "pid": pi.pid})
            bridge.read(300)  # warmed up
            bridge.send({"command": "go"})
            tapped = bridge.read(300)
            events = [(str(k), float(t)) for k, t in tap.ask({"command": "report"})["events"]]
        for flow_id in ids:
            pi.cancel_form(flow_id)
    hops = segments(tapped["starts"], tapped["samples"], events)
    return env, sides, size, hops


# --- one bridge: closed loop, 50 hosts, a replica group ----------------------------------------


def fleet_load(
    server: NatsServer, base: Path, rate: float, seconds: float, loop_forms: int, group_forms: int
) -> dict[str, Any]:
    """The closed loop, the open loop and the replica group, on one fleet of ``HOSTS`` hosts."""
    url = server.url
    assert server.process is not None
    out: dict[str, Any] = {}
    with workers() as pool:
        hosts = start(pool, "hosts", {"dir": str(base / "load"), "hosts": HOSTS})
        dirs = hosts.read()["ready"]["hosts"]
        forwarders = start(pool, "forwarders", {"url": url, "hosts": dirs})
        forwarders.read()
        hosts.ask({"command": "connected"})
        with workers() as bridges:
            bridge = start(bridges, "serve", {"url": url})
            bridge.read()
            # Warm-up: every host's form answered proves the bridge serves all 50 Pis.
            warm = hosts.ask({"command": "loop", "forms": 4 * HOSTS, "inflight": HOSTS}, 180)
            if warm["completed"] != 4 * HOSTS:
                raise RuntimeError(f"warm-up: {warm}")
            pids = {
                "bridge": bridge.pid,
                "forwarders": forwarders.pid,
                "hosts": hosts.pid,
                "nats-server": server.process.pid,
            }
            cpu = Cpu(pids)
            command = {"command": "loop", "forms": loop_forms, "inflight": CLOSED_INFLIGHT}
            out["closed"] = hosts.ask(command, 600)
            out["closed_cpu"] = cpu.per(int(out["closed"]["completed"]))
            out["open"] = hosts.ask({"command": "load", "rate": rate, "seconds": seconds}, 180)
        out["group"] = [
            group_rate(hosts, url, replicas, group_forms) for replicas in (1, GROUP_REPLICAS)
        ]
    return out


def group_rate(hosts: Worker, url: str, replicas: int, forms: int) -> float:
    """Forms/s of ``replicas`` bridges of one replica group, closed loop on ``GROUP_HOSTS``."""
    group = f"bench-{replicas}-{os.urandom(3).hex()}"
    job = {"url": url, "group": group, "think": GROUP_THINK_S, "capacity": GROUP_CAPACITY}
    with workers() as bridges:
        for _ in range(replicas):
            start(bridges, "serve", job)
        for bridge in bridges:
            bridge.read()
        warm = {"command": "loop", "forms": 4 * GROUP_HOSTS, "inflight": GROUP_HOSTS}
        hosts.ask({**warm, "hosts": GROUP_HOSTS}, 180)
        command = {"command": "loop", "forms": forms, "inflight": GROUP_INFLIGHT}
        done = hosts.ask({**command, "hosts": GROUP_HOSTS}, 600)
    return float(done["completed"]) / float(done["seconds"])


# --- forwarder memory ---------------------------------------------------------------------------


def forwarder_memory(
    url: str, base: Path, warm: int, forms: int, *, trace: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The forwarder's memory before and after ``forms`` forms (after ``warm`` forms)."""
    directory = base / ("mem-traced" if trace else "mem")
    with workers() as pool:
        hosts = start(pool, "hosts", {"dir": str(directory), "hosts": 1})
        dirs = hosts.read()["ready"]["hosts"]
        forwarder = start(pool, "forwarders", {"url": url, "hosts": dirs, "trace": trace})
        forwarder.read()
        hosts.ask({"command": "connected"})
        start(pool, "serve", {"url": url}).read()
        hosts.ask({"command": "loop", "forms": warm, "inflight": 20}, 600)
        before = forwarder.ask({"command": "memory"})
        hosts.ask({"command": "loop", "forms": forms, "inflight": 20}, 900)
        after = forwarder.ask({"command": "memory"})
    return before, after


# --- the report ---------------------------------------------------------------------------------


def report_round_trip(
    env: PiEnv, sides: dict[str, Side], size: int, hops: list[list[float]]
) -> list[str]:
    missed: list[str] = []
    fleet, chain, nats_part, relay_part = (sides[k] for k in ("fleet", "chain", "nats", "relay"))
    paired = summed(nats_part.samples, relay_part.samples)
    p50f, p99f = fleet.ms(0.5), fleet.ms(0.99)
    p50n, p99n = nats_part.ms(0.5), nats_part.ms(0.99)
    p50r, p99r = relay_part.ms(0.5), relay_part.ms(0.99)
    floor50, floor99 = chain.ms(0.5), chain.ms(0.99)
    ratio50, ratio99 = p50f / floor50, p99f / floor99
    ok50, ok99 = ratio50 <= RTT_P50_TARGET, ratio99 <= RTT_P99_TARGET
    print(
        f"round trip with a real Pi ({env.version}, {env.flavour}), {len(fleet.samples)} submits"
        " per side, GC on (ms):"
    )
    rows = [
        ("fleet (BridgeClient/NatsTransport -> NATS -> forwarder -> relay -> Pi)", p50f, p99f),
        ("floor: the two parts in turn, timed in one loop", floor50, floor99),
        (f"  part alone: raw NATS request/reply ({size} B body)", p50n, p99n),
        ("  part alone: SDK over the relay (BridgeClient/RelayTransport)", p50r, p99r),
    ]
    for name, p50, p99 in rows:
        print(f"  {name:<72} p50 {p50:.3f}  p99 {p99:.3f}")
    print(
        f"    (the parts alone, their samples paired: p50 {percentile(paired, 0.5) * 1e3:.3f}"
        f"  p99 {percentile(paired, 0.99) * 1e3:.3f}; their percentiles summed: p50"
        f" {p50n + p50r:.3f}  p99 {p99n + p99r:.3f})"
    )
    print(
        f"  fleet/floor p50 ratio {ratio50:.2f} (target <= {RTT_P50_TARGET}) {verdict(ok50)}; "
        f"p99 ratio {ratio99:.2f} (target <= {RTT_P99_TARGET}) {verdict(ok99)}"
    )
    print(f"  cpu per submit (us): fleet: {fleet.cpu_line()}")
    print(f"                       floor: {chain.cpu_line()}")
    print(f"                       relay alone: {relay_part.cpu_line()}")
    print(f"                       NATS alone: {nats_part.cpu_line()}")
    print(
        f"  where the fleet's p50 goes: the floor {floor50:.3f} + the fleet's own work"
        f" {p50f - floor50:+.3f} ms (the parts alone: relay {p50r:.3f}, NATS {p50n:.3f})"
    )
    if hops[0]:
        print(
            f"  per hop, p50 of each (another round, a tap on NATS and on the relay, {len(hops[0])}"
            " submits; ms):"
        )
        for name, took in zip(HOPS, hops, strict=True):
            print(f"    {name:<58} {percentile(took, 0.5) * 1e3:.3f}")
    else:
        print("  per hop: the tap saw no submit whole")
    if not ok50:
        missed.append(f"round trip p50 {ratio50:.2f}x the floor > {RTT_P50_TARGET}x")
    if not ok99:
        missed.append(f"round trip p99 {ratio99:.2f}x the floor > {RTT_P99_TARGET}x")
    return missed


def report_load(load: dict[str, Any]) -> list[str]:
    missed: list[str] = []
    closed = load["closed"]
    rate = float(closed["completed"]) / float(closed["seconds"])
    ok_closed = rate >= CLOSED_RATE_TARGET
    print(
        f"one bridge, closed loop: {closed['completed']} forms, {CLOSED_INFLIGHT} open at once over"
        f" {HOSTS} FakeRelay hosts: {rate:.0f} forms/s (target >= {CLOSED_RATE_TARGET:g}/s)"
        f" {verdict(ok_closed)}"
    )
    half, whole = float(closed["half_seconds"]), float(closed["seconds"])
    halves = int(closed["completed"]) // 2
    cpu = load["closed_cpu"]
    print("  cpu per form (us): " + ", ".join(f"{name} {us:.0f}" for name, us in cpu.items()))
    # Every process of the loop shares this machine's CPUs: their CPU per form bounds the rate
    # whatever the bridge does; the bridge's own share says what it alone would allow.
    cpus = os.cpu_count() or 1
    total = sum(cpu.values())
    print(
        f"  ceiling of this machine: {cpus} CPUs / {total:.0f} us of CPU per form ="
        f" {cpus * 1e6 / total:.0f} forms/s; the bridge's own {cpu['bridge']:.0f} us per form"
        f" bounds it at {1e6 / cpu['bridge']:.0f} forms/s on one CPU of its own"
    )
    print(
        f"  first half {halves / half:.0f} forms/s, second half"
        f" {(int(closed['completed']) - halves) / (whole - half):.0f} forms/s"
    )
    if not ok_closed:
        missed.append(f"one bridge {rate:.0f} forms/s < {CLOSED_RATE_TARGET:g}")

    loaded = load["open"]
    latencies = [float(x) for x in loaded["latencies"]]
    answered = len(latencies)
    opened = int(loaded["opened"])
    offered = opened / float(loaded["offered_seconds"])
    achieved = answered / float(loaded["answered_seconds"])
    kept_up = answered == opened and (
        float(loaded["answered_seconds"]) - float(loaded["offered_seconds"]) <= 1.0
    )
    p50l = percentile(latencies, 0.5) * 1e3 if latencies else float("inf")
    p99l = percentile(latencies, 0.99) * 1e3 if latencies else float("inf")
    ok_rate = kept_up and achieved >= LOAD_RATE_TARGET * 0.98 and offered >= LOAD_RATE_TARGET * 0.98
    ok_p99 = p99l <= LOAD_P99_TARGET_MS and answered == opened
    print(
        f"{HOSTS} hosts, one bridge: {opened} forms offered at {offered:.0f}/s, {answered} "
        f"answered at {achieved:.0f}/s (target >= {LOAD_RATE_TARGET:g}/s sustained) "
        f"{verdict(ok_rate)}"
    )
    print(
        f"  open -> answered p50 {p50l:.1f} ms  p99 {p99l:.1f} ms  max "
        f"{max(latencies, default=0) * 1e3:.1f} ms (target p99 <= {LOAD_P99_TARGET_MS:g} ms) "
        f"{verdict(ok_p99)}"
    )
    if not ok_rate:
        missed.append(f"{HOSTS} hosts: {achieved:.0f} forms/s < {LOAD_RATE_TARGET:g} sustained")
    if not ok_p99:
        missed.append(f"{HOSTS} hosts: p99 {p99l:.1f} ms > {LOAD_P99_TARGET_MS:g} ms")

    one, many = load["group"]
    ratio = many / one
    ok_group = ratio >= GROUP_TARGET
    print(
        f"group of {GROUP_REPLICAS} replicas: {many:.0f} forms/s, one replica {one:.0f}"
        f" forms/s: {ratio:.2f}x (target >= {GROUP_TARGET}x; each replica works on at most"
        f" {GROUP_CAPACITY} forms at once, {GROUP_THINK_S * 1e3:g} ms each;"
        f" {GROUP_INFLIGHT} open over {GROUP_HOSTS} hosts)"
        f" {verdict(ok_group)}"
    )
    if not ok_group:
        missed.append(f"group of {GROUP_REPLICAS}: {ratio:.2f}x one replica < {GROUP_TARGET}x")
    return missed


def report_memory(
    mem_forms: int,
    mem_warm: int,
    plain: tuple[dict[str, Any], dict[str, Any]],
    traced_run: tuple[dict[str, Any], dict[str, Any]],
) -> list[str]:
    missed: list[str] = []
    before, after = plain
    traced_before, traced_after = traced_run
    rss = after["rss_kib"] - before["rss_kib"]
    objects = after["gc_objects"] - before["gc_objects"]
    traced = (traced_after["traced"] - traced_before["traced"]) / mem_forms
    ok_rss = rss <= RSS_TARGET_KIB
    ok_traced = traced <= TRACED_TARGET_B_PER_FORM
    print(
        f"forwarder memory over {mem_forms} forms (after {mem_warm}): RSS {before['rss_kib']:.0f}"
        f" -> {after['rss_kib']:.0f} KiB ({rss:+.0f}; target <= +{RSS_TARGET_KIB:g}) "
        f"{verdict(ok_rss)}"
    )
    print(
        f"  traced (tracemalloc from the start, another run) {traced_before['traced'] / 1024:.0f}"
        f" -> {traced_after['traced'] / 1024:.0f} KiB = {traced:+.1f} B/form "
        f"(target <= {TRACED_TARGET_B_PER_FORM:g}) {verdict(ok_traced)}; gc objects "
        f"{before['gc_objects']:.0f} -> {after['gc_objects']:.0f} ({objects:+.0f})"
    )
    if not ok_traced:
        print(f"  held most (tracemalloc): {'; '.join(traced_after['top'])}")
    if not ok_rss:
        missed.append(f"forwarder RSS +{rss:.0f} KiB > {RSS_TARGET_KIB:g}")
    if not ok_traced:
        missed.append(f"forwarder keeps {traced:.1f} B/form > {TRACED_TARGET_B_PER_FORM:g}")
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small counts, for a short run")
    parser.add_argument(
        "--smoke", action="store_true", help="--quick, and exit 0 on a missed target (CI)"
    )
    args = parser.parse_args(argv)
    quick = args.quick or args.smoke
    rounds, count, warm = (2, 100, 100) if quick else (4, 500, 500)
    seconds, loop_forms, group_forms = (2.0, 1000, 150) if quick else (10.0, 10_000, 1500)
    mem_warm, mem_forms = (9000, 1000) if quick else (WARM_FORMS, MEMORY_FORMS)
    try:
        env = find_pi()
    except PiNotInstalled as exc:
        print(f"bench/fleet.py needs Pi 1.6.0 (bash scripts/install-pi.sh): {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pifleet") as tmp:
        base = Path(tmp)
        server = NatsServer(base / "jetstream")
        server.start()
        try:
            sides = round_trip(env, server, base, rounds, count, warm)
            load = fleet_load(server, base, LOAD_RATE_TARGET, seconds, loop_forms, group_forms)
            plain = forwarder_memory(server.url, base, mem_warm, mem_forms, trace=False)
            traced = forwarder_memory(server.url, base, mem_warm, mem_forms, trace=True)
        finally:
            server.stop()
    missed = report_round_trip(*sides)
    missed += report_load(load)
    missed += report_memory(mem_forms, mem_warm, plain, traced)
    print("targets met" if not missed else "TARGETS MISSED: " + "; ".join(missed))
    if args.smoke and missed:
        print("(--smoke: targets are not enforced)")
        return 0
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
