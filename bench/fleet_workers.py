"""The processes of bench/fleet.py: hosts (relays and forwarders), a lone forwarder, bridges.

Run by ``bench/fleet.py`` only (``python bench/fleet_workers.py ROLE JOB``, JOB a JSON object):
each writes JSON lines on stdout (``{"ready": ...}`` first where it serves) and takes commands
as JSON lines on stdin where it has any (end of input: stop). Every wait has a deadline.

Roles:

* ``host``: ``hosts`` simulated hosts in one process, each a ``FakeRelay`` (a real
  ``pi_ask_core.FlowHost`` behind a real relay socket, speaking the relay's protocol) in a
  directory of its own, and, with ``forwarders``, each its own ``Forwarder`` instance (its own
  NATS connection, host id ``h00``, ``h01``, ...). Opens ``forms`` forms per host at once (the
  round trip's forms), answers a NATS ``echo`` (the floor's responder), and on command runs an
  open-loop load (``load``: forms at a fixed rate, round robin over the hosts, each timed from
  ``FlowHost.start`` to its ``completed`` at the host) or a closed loop (``loop``).
* ``forwarder``: one ``Forwarder`` alone (its memory is measured: ``measure``).
* ``bridge``: ``rtt`` (a ``BridgeClient`` over ``NatsTransport``, timed ``respond`` calls),
  ``nats`` (timed raw ``request``/reply, the floor), or ``serve`` (``Fleet.serve`` answering
  every form of every Pi).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nats  # noqa: E402
from nats.aio.msg import Msg  # noqa: E402
from relay_gc import GcWatch  # noqa: E402  (bench/, this script's directory)

from pi_ask_core import COMPLETED, CompletedEvent  # noqa: E402
from pi_ask_sdk import AnswerBuilder, BridgeClient, FlowView, SubmitRejected  # noqa: E402
from pi_ask_sdk.fleet import Fleet, FleetPi, Forwarder  # noqa: E402
from pi_ask_sdk.serving import serve  # noqa: E402
from pi_ask_sdk.testing import unchecked_answer  # noqa: E402
from tests.relay.fake_relay import FakeRelay  # noqa: E402

WAIT = 60.0
ECHO = "bench.echo"

FORM: dict[str, Any] = {
    "title": "Deploy",
    "questions": [
        {
            "id": "q",
            "prompt": "Which one?",
            "options": [
                {"value": "a", "label": "Alpha"},
                {"value": "b", "label": "Beta", "recommended": True},
            ],
        }
    ],
}


def say(record: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


class Commands:
    """Lines on stdin, read by a thread-free reader on the loop."""

    def __init__(self) -> None:
        self._reader: asyncio.StreamReader | None = None

    async def next(self) -> dict[str, Any]:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader()
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
            self._reader = reader
        line = await self._reader.readline()
        if not line:
            return {"command": "stop"}
        parsed: dict[str, Any] = json.loads(line)
        return parsed


def memory() -> dict[str, object]:
    """This process's resident set (KiB), gc-tracked objects, tracemalloc's traced bytes, and
    the three source lines holding most of them."""
    gc.collect()
    with open(f"/proc/{os.getpid()}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    top: list[str] = []
    if tracemalloc.is_tracing():
        for stat in tracemalloc.take_snapshot().statistics("lineno")[:3]:
            frame = stat.traceback[0]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            top.append(f"{where} {stat.size / 1024:.0f} KiB in {stat.count}")
    return {"rss_kib": rss, "gc_objects": len(gc.get_objects()), "traced": traced, "top": top}


# --- host ---------------------------------------------------------------------------------------


class SimHost:
    """One simulated host: its relay (and forwarder), the forms it opened and when."""

    def __init__(self, directory: Path, host_id: str) -> None:
        self.host_id = host_id
        self.relay = FakeRelay(directory, pid=os.getpid())
        self.forwarder: Forwarder | None = None
        self.opened: dict[str, float] = {}
        self.done: Callable[[str, float], None] = lambda flow_id, at: None
        self.relay.bus.on(COMPLETED, self._completed)

    def _completed(self, data: object) -> None:
        at = time.perf_counter()
        if isinstance(data, CompletedEvent):
            self.done(data.flow_id, at)


async def host_worker(job: dict[str, Any]) -> None:
    base = Path(job["dir"])
    count = int(job["hosts"])
    hosts = [SimHost(base / f"h{i:02d}", f"h{i:02d}") for i in range(count)]
    stops: list[asyncio.Event] = []
    runs: list[asyncio.Task[None]] = []
    loop = asyncio.get_running_loop()
    echo = await nats.connect(job["url"], name="bench echo")
    for host in hosts:
        await host.relay.start()
    if job.get("forwarders", True):
        for host in hosts:
            forwarder = Forwarder(job["url"], host_id=host.host_id, directory=host.relay.directory)
            await forwarder.open()
            host.forwarder = forwarder
            stop = asyncio.Event()
            stops.append(stop)
            runs.append(loop.create_task(forwarder.run(stop)))

    async def on_echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    await echo.subscribe(ECHO, cb=on_echo)
    forms: dict[str, list[str]] = {}
    for host in hosts:
        forms[host.host_id] = [
            host.relay.open_form(FORM, f"rt-{n}").flow_id for n in range(int(job.get("forms", 0)))
        ]
    if job.get("forwarders", True):
        await asyncio.wait_for(
            asyncio.gather(*(h.relay.wait_connected(1, WAIT) for h in hosts)), WAIT
        )
    say(
        {
            "ready": {
                "pid": os.getpid(),
                "hosts": {h.host_id: str(h.relay.path) for h in hosts},
                "forms": forms,
            }
        }
    )
    commands = Commands()
    try:
        while True:
            command = await commands.next()
            name = command["command"]
            if name == "stop":
                break
            if name == "load":
                say(await load(hosts, float(command["rate"]), float(command["seconds"])))
            elif name == "loop":
                say(await closed_loop(hosts, int(command["forms"]), int(command["inflight"])))
            elif name == "memory":
                say(memory())
    finally:
        for stop in stops:
            stop.set()
        for run in runs:
            await asyncio.wait_for(run, 10)
        for host in hosts:
            if host.forwarder is not None:
                await asyncio.wait_for(host.forwarder.close(), 10)
            await host.relay.stop()
        await echo.close()


async def load(hosts: list[SimHost], rate: float, seconds: float) -> dict[str, object]:
    """Open forms at ``rate`` per second (round robin over the hosts) for ``seconds``; each is
    timed from its opening to its ``completed`` at the host. Waits (bounded) for the last."""
    latencies: list[float] = []
    pending: set[str] = set()
    all_done = asyncio.Event()
    loop = asyncio.get_running_loop()
    total = max(1, round(rate * seconds))
    last_done = 0.0

    for host in hosts:

        def done(flow_id: str, at: float, host: SimHost = host) -> None:
            nonlocal last_done
            opened = host.opened.pop(flow_id, None)
            if opened is None:
                return
            latencies.append(at - opened)
            pending.discard(f"{host.host_id}/{flow_id}")
            last_done = at
            if len(latencies) == total:
                all_done.set()

        host.done = done
    clock = time.perf_counter
    start = clock()
    interval = 1.0 / rate
    late = 0.0
    tag = os.urandom(3).hex()
    for n in range(total):
        due = start + n * interval
        now = clock()
        if due > now:
            await asyncio.sleep(due - now)  # the offered load's schedule, not a synchronisation
        else:
            late = max(late, now - due)
            if n % 16 == 0:
                await asyncio.sleep(0)  # let the loop breathe when behind
        host = hosts[n % len(hosts)]
        opened = clock()
        flow_id = host.relay.open_form(FORM, f"l{tag}-{n}").flow_id
        host.opened[flow_id] = opened
        pending.add(f"{host.host_id}/{flow_id}")
    offered_end = clock()
    with contextlib.suppress(asyncio.TimeoutError):  # the unanswered are counted below
        await asyncio.wait_for(all_done.wait(), 30)
    for host in hosts:
        host.opened.clear()
    return {
        "latencies": latencies,
        "opened": total,
        "offered_seconds": offered_end - start,
        "answered_seconds": (last_done or clock()) - start,
        "unanswered": len(pending),
        "max_schedule_lag": late,
        "loop_time": loop.time(),
    }


async def closed_loop(hosts: list[SimHost], forms: int, inflight: int) -> dict[str, object]:
    """``forms`` forms through the hosts, ``inflight`` open at any time (each opened when one
    completes); seconds it took, and how many completed."""
    queue: asyncio.Queue[None] = asyncio.Queue()
    completed = 0

    for host in hosts:

        def done(flow_id: str, at: float, host: SimHost = host) -> None:
            nonlocal completed
            if host.opened.pop(flow_id, None) is not None:
                completed += 1
                queue.put_nowait(None)

        host.done = done
    tag = os.urandom(3).hex()
    start = time.perf_counter()
    opened = 0
    for _ in range(min(inflight, forms)):
        host = hosts[opened % len(hosts)]
        host.opened[host.relay.open_form(FORM, f"c{tag}-{opened}").flow_id] = 0.0
        opened += 1
    while completed < forms:
        await asyncio.wait_for(queue.get(), 30)
        if opened < forms:
            host = hosts[opened % len(hosts)]
            host.opened[host.relay.open_form(FORM, f"c{tag}-{opened}").flow_id] = 0.0
            opened += 1
    return {"seconds": time.perf_counter() - start, "completed": completed}


# --- forwarder ----------------------------------------------------------------------------------


async def forwarder_worker(job: dict[str, Any]) -> None:
    """One forwarder of host ``host`` following the relays in ``dir``; ``memory`` reports.
    With ``trace``, tracemalloc traces from the start: an entry a bounded cache drops was
    allocated before any baseline, so only the total traced from the start shows net growth
    (and tracing costs memory of its own: RSS is measured in a run without it)."""
    if job.get("trace"):
        tracemalloc.start()
    forwarder = Forwarder(job["url"], host_id=job["host"], directory=Path(job["dir"]))
    await forwarder.open()
    stop = asyncio.Event()
    run = asyncio.get_running_loop().create_task(forwarder.run(stop))
    say({"ready": {"pid": os.getpid()}})
    commands = Commands()
    try:
        while True:
            command = await commands.next()
            if command["command"] == "stop":
                break
            if command["command"] == "memory":
                say(memory())
    finally:
        stop.set()
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(forwarder.close(), 10)


# --- bridge -------------------------------------------------------------------------------------


def invalid_answer(flow: FlowView) -> Any:
    """Refused by the host as ``invalid_answer`` (a value the form lacks): the form stays open,
    so every timed submit meets the same state."""
    return unchecked_answer(flow, {flow.questions[0].id: ["nope"]})


async def rtt_worker(job: dict[str, Any]) -> dict[str, object]:
    """Timed ``client.respond`` through the fleet: what a bridge's call does."""
    async with Fleet(job["url"]) as fleet:
        transport = fleet.transport(job["host"], int(job["pid"]))
        async with BridgeClient(transport) as client:
            flows = [client.open_flows[fid] for fid in client.open_flows if fid in job["forms"]]
            if len(flows) != len(job["forms"]):
                raise RuntimeError(f"the snapshot had {len(flows)} of {len(job['forms'])} forms")
            answers = [(flow, invalid_answer(flow)) for flow in flows]

            async def one_round(count: int, starts: list[float]) -> list[float]:
                out: list[float] = []
                clock = time.perf_counter
                for n in range(count):
                    flow, answer = answers[n % len(answers)]
                    start = clock()
                    outcome = await client.respond(flow, answer, timeout=10)
                    out.append(clock() - start)
                    starts.append(start)
                    if not isinstance(outcome, SubmitRejected):
                        raise RuntimeError(f"expected a refusal, got {outcome!r}")
                return out

            await one_round(int(job["warm"]), [])
            starts: list[float] = []
            with GcWatch() as watch:
                samples = await one_round(int(job["count"]), starts)
    return {"samples": samples, "gc": watch.report(starts, samples)}


async def nats_worker(job: dict[str, Any]) -> dict[str, object]:
    """Timed raw NATS request/reply with a submit-sized body: the broker's floor."""
    nc = await nats.connect(job["url"], name="bench floor")
    try:
        body = b"x" * int(job["size"])
        clock = time.perf_counter
        for _ in range(int(job["warm"])):
            await nc.request(ECHO, body, timeout=10)
        samples: list[float] = []
        starts: list[float] = []
        with GcWatch() as watch:
            for _ in range(int(job["count"])):
                start = clock()
                await nc.request(ECHO, body, timeout=10)
                samples.append(clock() - start)
                starts.append(start)
    finally:
        await nc.close()
    return {"samples": samples, "gc": watch.report(starts, samples)}


async def serve_worker(job: dict[str, Any]) -> None:
    """One answering bridge for every Pi of the fleet (``Fleet.serve``), until told to stop:
    each form answered with an explicit value, as soon as it is seen."""
    answered = 0

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        nonlocal answered
        async for flow in client.flows():
            question = flow.questions[0]
            answer = AnswerBuilder(flow).select(question, question.value("b")).build()
            await client.respond(flow, answer, timeout=30)
            answered += 1

    stop = asyncio.Event()
    async with Fleet(job["url"]) as fleet:
        serving = asyncio.get_running_loop().create_task(serve(handler, fleet, stop=stop))
        say({"ready": {"pid": os.getpid()}})
        commands = Commands()
        while (await commands.next())["command"] != "stop":
            say({"answered": answered})
        stop.set()
        await asyncio.wait_for(serving, 30)


def main() -> int:
    role = sys.argv[1]
    job = json.loads(sys.argv[2])
    if role == "host":
        asyncio.run(host_worker(job))
    elif role == "forwarder":
        asyncio.run(forwarder_worker(job))
    elif role == "rtt":
        say(asyncio.run(rtt_worker(job)))
    elif role == "nats":
        say(asyncio.run(nats_worker(job)))
    elif role == "serve":
        asyncio.run(serve_worker(job))
    else:
        raise SystemExit(f"unknown role {role!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
