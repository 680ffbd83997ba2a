"""The processes of bench/fleet.py, one role each (``python bench/fleet_workers.py ROLE JOB``).

Each prints JSON lines on stdout and reads JSON commands on stdin (end of input: stop):

* ``hosts``: simulated hosts in one process, each a ``FakeRelay`` (tests/relay: a real
  ``pi_ask_core.FlowHost`` behind a real relay socket, in a directory of its own); opens forms
  and times them (``load``: open loop; ``loop``: closed loop). No forwarder runs here.
* ``forwarders``: one ``Forwarder`` per host, each following its host's relay directory, each
  with its own NATS connection (``memory`` reports this process's memory).
* ``serve``: one answering bridge for every Pi of the fleet (``answered`` reports its count).
* ``echo``: a raw NATS responder, the far end of the NATS floor.
* ``tap``: watches NATS and a relay socket, for the round trip's per-hop breakdown.
* timed round trips, each in a process of its own: ``rtt`` (``BridgeClient`` over the fleet's
  ``NatsTransport``), ``relay`` (``BridgeClient`` over ``RelayTransport``, straight to the Pi's
  relay), ``nats`` (raw request/reply) and ``chain`` (the floor: a raw request/reply then a
  ``RelayTransport`` round trip, in turn, timed as one). Each warms up, says
  ``{"warm": ...}``, waits for ``go`` (so the parent reads every process's CPU time around the
  timed part only), then times its round trips and says them.

Every use of the fleet's API is in the section "the fleet's API" below: the rest of the bench
knows nothing of where the fleet's names live.
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
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nats  # noqa: E402
from nats.aio.client import Client as NatsClient  # noqa: E402
from nats.aio.msg import Msg  # noqa: E402
from relay_gc import GcWatch  # noqa: E402  (bench/, this script's directory)

from pi_ask_core import COMPLETED, CompletedEvent  # noqa: E402
from pi_ask_sdk import (  # noqa: E402
    AnswerBuilder,
    BridgeClient,
    ClientStream,
    FlowView,
    SubmitRejected,
)
from pi_ask_sdk.fleet import (  # noqa: E402  (the fleet's API)
    Fleet,
    FleetNames,
    Forwarder,
    NatsTransport,
)
from pi_ask_sdk.serving import serve  # noqa: E402  (the fleet's API)
from pi_ask_sdk.testing import UncheckedAnswer, unchecked_answer  # noqa: E402
from pi_ask_sdk.transports.relay import RelayTransport  # noqa: E402
from tests.relay.fake_relay import FakeRelay  # noqa: E402

# --- the fleet's API (with the imports marked above, the only lines that name it) -------------

Handler = Callable[[BridgeClient], Awaitable[None]]


def open_fleet(url: str, group: str | None = None) -> Fleet:
    """A bridge's fleet (an async context manager), in replica group ``group`` if given."""
    return Fleet(url, group=group)


async def fleet_transport(fleet: Fleet, host: str, pid: int) -> NatsTransport:
    """The transport of Pi ``pid`` of ``host`` once the fleet knows that Pi."""
    await fleet.wait_pi(host, pid, timeout=WAIT)
    return fleet.transport(host, pid)


async def serve_fleet(fleet: Fleet, handler: Handler, stop: asyncio.Event) -> None:
    """Serve every Pi of the fleet with ``handler`` until ``stop`` is set."""

    async def per_pi(client: BridgeClient, pi: object) -> None:
        await handler(client)

    await serve(per_pi, fleet, stop=stop)


def submit_subjects(host: str, pid: int) -> list[str]:
    """Where a Pi's submits go on NATS and where their replies come back (a bridge's inbox),
    for the tap: watching only these leaves every other subject's "no responders" answer as
    it is (the fleet tells by it that no forwarder listens)."""
    return [FleetNames().submit(host, pid), "_INBOX.>"]


@contextlib.asynccontextmanager
async def forwarding(url: str, host_id: str, directory: Path) -> AsyncIterator[None]:
    """A running forwarder of host ``host_id`` following the relays in ``directory``."""
    forwarder = Forwarder(url, host_id=host_id, directory=directory)
    await forwarder.open()
    stop = asyncio.Event()
    run = asyncio.get_running_loop().create_task(forwarder.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(forwarder.close(), 10)


# --- shared -------------------------------------------------------------------------------------

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


# --- hosts --------------------------------------------------------------------------------------


class SimHost:
    """One simulated host: its relay, the forms it opened and when."""

    def __init__(self, directory: Path, host_id: str) -> None:
        self.host_id = host_id
        self.relay = FakeRelay(directory, pid=os.getpid())
        self.opened: dict[str, float] = {}
        self.done: Callable[[str, float], None] = lambda flow_id, at: None
        self.relay.bus.on(COMPLETED, self._completed)

    def _completed(self, data: object) -> None:
        at = time.perf_counter()
        if isinstance(data, CompletedEvent):
            self.done(data.flow_id, at)


async def hosts_worker(job: dict[str, Any]) -> None:
    base = Path(job["dir"])
    hosts = [SimHost(base / f"h{i:02d}", f"h{i:02d}") for i in range(int(job["hosts"]))]
    for host in hosts:
        await host.relay.start()
    say({"ready": {"hosts": {h.host_id: str(h.relay.directory) for h in hosts}}})
    commands = Commands()
    try:
        while True:
            command = await commands.next()
            name = command["command"]
            some = hosts[: int(command.get("hosts", len(hosts)))]
            if name == "stop":
                break
            if name == "connected":  # every relay has its forwarder
                await asyncio.wait_for(
                    asyncio.gather(*(h.relay.wait_connected(1, WAIT) for h in hosts)), WAIT
                )
                say({"connected": len(hosts)})
            elif name == "load":
                say(await load(some, float(command["rate"]), float(command["seconds"])))
            elif name == "loop":
                say(await closed_loop(some, int(command["forms"]), int(command["inflight"])))
    finally:
        for host in hosts:
            await host.relay.stop()


async def load(hosts: list[SimHost], rate: float, seconds: float) -> dict[str, object]:
    """Open forms at ``rate`` per second (round robin over the hosts) for ``seconds``; each is
    timed from its opening to its ``completed`` at the host. Waits (bounded) for the last."""
    latencies: list[float] = []
    all_done = asyncio.Event()
    total = max(1, round(rate * seconds))
    last_done = 0.0

    for host in hosts:

        def done(flow_id: str, at: float, host: SimHost = host) -> None:
            nonlocal last_done
            opened = host.opened.pop(flow_id, None)
            if opened is None:
                return
            latencies.append(at - opened)
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
    offered_end = clock()
    with contextlib.suppress(asyncio.TimeoutError):  # the unanswered are counted below
        await asyncio.wait_for(all_done.wait(), 30)
    unanswered = sum(len(host.opened) for host in hosts)
    for host in hosts:
        host.opened.clear()
    return {
        "latencies": latencies,
        "opened": total,
        "offered_seconds": offered_end - start,
        "answered_seconds": (last_done or clock()) - start,
        "unanswered": unanswered,
        "max_schedule_lag": late,
    }


async def closed_loop(hosts: list[SimHost], forms: int, inflight: int) -> dict[str, object]:
    """``forms`` forms through the hosts, ``inflight`` open at any time (each opened when one
    completes); seconds it took (and to the half of them), and how many completed."""
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

    def open_one() -> None:
        nonlocal opened
        host = hosts[opened % len(hosts)]
        host.opened[host.relay.open_form(FORM, f"c{tag}-{opened}").flow_id] = 0.0
        opened += 1

    half = 0.0
    for _ in range(min(inflight, forms)):
        open_one()
    while completed < forms:
        await asyncio.wait_for(queue.get(), 30)
        if not half and completed >= forms // 2:
            half = time.perf_counter() - start
        if opened < forms:
            open_one()
    return {"seconds": time.perf_counter() - start, "half_seconds": half, "completed": completed}


# --- forwarders ---------------------------------------------------------------------------------


async def forwarders_worker(job: dict[str, Any]) -> None:
    """One forwarder per host of ``hosts`` ({host id: relay directory}); ``memory`` reports.
    With ``trace``, tracemalloc traces from the start: an entry a bounded cache drops was
    allocated before any baseline, so only the total traced from the start shows net growth
    (and tracing costs memory of its own: RSS is measured in a run without it)."""
    if job.get("trace"):
        tracemalloc.start()
    async with contextlib.AsyncExitStack() as stack:
        for host_id, directory in dict(job["hosts"]).items():
            await stack.enter_async_context(forwarding(job["url"], host_id, Path(directory)))
        say({"ready": {"pid": os.getpid()}})
        commands = Commands()
        while True:
            command = await commands.next()
            if command["command"] == "stop":
                break
            if command["command"] == "memory":
                say(memory())


# --- bridges ------------------------------------------------------------------------------------


def refused(flow: FlowView) -> UncheckedAnswer:
    """Refused by the host as ``invalid_answer`` (a value the form lacks): the form stays open,
    so every timed submit meets the same state."""
    return unchecked_answer(flow, {flow.questions[0].id: ["nope"]})


async def wait_forms(client: BridgeClient, ids: list[str]) -> list[FlowView]:
    """The client's views of the forms ``ids`` (its snapshot, or as they come)."""
    stream: ClientStream[FlowView] = client.flows()
    views: dict[str, FlowView] = {
        fid: view for fid, view in client.open_flows.items() if fid in ids
    }
    while not all(i in views for i in ids):
        view = await stream.next(timeout=WAIT)
        if view.flow_id in ids:
            views[view.flow_id] = view
    return [views[i] for i in ids]


async def timed_calls(call: Callable[[int], Awaitable[None]], job: dict[str, Any]) -> None:
    """``call(n)`` timed: ``warm`` calls first (untimed), then, at a ``go`` from the parent,
    ``count`` timed calls back to back; says them."""

    async def one_round(count: int, starts: list[float]) -> list[float]:
        out: list[float] = []
        clock = time.perf_counter
        for n in range(count):
            start = clock()
            await call(n)
            out.append(clock() - start)
            starts.append(start)
        return out

    await one_round(int(job["warm"]), [])
    say({"warm": True})
    await Commands().next()  # go
    starts: list[float] = []
    with GcWatch() as watch:
        samples = await one_round(int(job["count"]), starts)
    say({"samples": samples, "starts": starts, "gc": watch.report(starts, samples)})


def respond_refused(
    client: BridgeClient, flows: list[FlowView]
) -> Callable[[int], Awaitable[None]]:
    """What a bridge's call does: build the answer, ``await client.respond`` (refused as
    ``invalid_answer``, so the form stays open), to the forms in turn."""

    async def call(n: int) -> None:
        flow = flows[n % len(flows)]
        outcome = await client.respond(flow, refused(flow), timeout=10)
        if not isinstance(outcome, SubmitRejected) or outcome.error != "invalid_answer":
            raise RuntimeError(f"expected an invalid_answer refusal, got {outcome!r}")

    return call


def nats_request(nc: NatsClient, size: int) -> Callable[[int], Awaitable[None]]:
    """A raw NATS request/reply with a ``size``-byte body (a submit's), to the echo worker."""
    body = b"x" * size

    async def call(n: int) -> None:
        await nc.request(ECHO, body, timeout=10)

    return call


async def rtt_worker(job: dict[str, Any]) -> None:
    """Timed ``client.respond`` through the fleet (``BridgeClient`` over ``NatsTransport``)."""
    async with open_fleet(job["url"]) as fleet:
        transport = await fleet_transport(fleet, job["host"], int(job["pid"]))
        async with BridgeClient(transport) as client:
            flows = await wait_forms(client, list(job["forms"]))
            await timed_calls(respond_refused(client, flows), job)


async def relay_worker(job: dict[str, Any]) -> None:
    """Timed ``client.respond`` over the relay alone (``BridgeClient`` over ``RelayTransport``)."""
    async with BridgeClient(RelayTransport(Path(job["socket"]))) as client:
        flows = await wait_forms(client, list(job["forms"]))
        await timed_calls(respond_refused(client, flows), job)


async def nats_worker(job: dict[str, Any]) -> None:
    """Timed raw NATS request/reply with a submit-sized body: the broker's floor part."""
    nc = await nats.connect(job["url"], name="bench floor")
    try:
        await timed_calls(nats_request(nc, int(job["size"])), job)
    finally:
        await nc.close()


async def chain_worker(job: dict[str, Any]) -> None:
    """The floor, timed in one loop: a raw NATS request/reply then ``client.respond`` over the
    relay alone, each call the two in turn (so every process of the floor waits for the
    others between its turns, as each of the fleet's does)."""
    nc = await nats.connect(job["url"], name="bench floor")
    try:
        async with BridgeClient(RelayTransport(Path(job["socket"]))) as client:
            flows = await wait_forms(client, list(job["forms"]))
            request = nats_request(nc, int(job["size"]))
            respond = respond_refused(client, flows)

            async def call(n: int) -> None:
                await request(n)
                await respond(n)

            await timed_calls(call, job)
    finally:
        await nc.close()


async def echo_worker(job: dict[str, Any]) -> None:
    """The NATS floor's far end: every request answered with its own body."""
    nc = await nats.connect(job["url"], name="bench echo")

    async def on_echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    await nc.subscribe(ECHO, cb=on_echo)
    await nc.flush()
    say({"ready": {"pid": os.getpid()}})
    commands = Commands()
    while (await commands.next())["command"] != "stop":
        pass
    await nc.close()


class Tap(asyncio.Protocol):
    """A silent reader of a byte stream (a relay socket, or a NATS connection speaking the
    plain protocol) that notes when data holding each marker came, as it comes (no parser or
    dispatch of a client library in between): ``(kind, perf_counter)`` for each ``marks``
    entry ``(kind, needles)`` whose needles are all in a chunk (a chunk holds one message at the
    rates of a round trip). Answers the server's ``PING``s."""

    def __init__(self, events: list[tuple[str, float]], marks: list[tuple[str, bytes]]) -> None:
        self.events = events
        self.marks = [(kind, needles.split(b"|")) for kind, needles in marks]
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        at = time.perf_counter()
        for kind, needles in self.marks:
            if all(needle in data for needle in needles):
                self.events.append((kind, at))
        if b"PING\r\n" in data and self.transport is not None:
            self.transport.write(b"PONG\r\n")


async def tap_worker(job: dict[str, Any]) -> None:
    """Watches a round trip's hops from outside, by the monotonic clock all processes share:
    every NATS message holding a submit (``request``) or a submit-result (``reply``), and
    every ``submit-result`` the relay sends its clients (``result``). Any command but
    ``stop`` says them."""
    events: list[tuple[str, float]] = []
    loop = asyncio.get_running_loop()
    address = job["url"].removeprefix("nats://")
    host, port = address.rsplit(":", 1)
    marks = [("request", b'"response":'), ("reply", b'"requestId":|"ok":')]
    nats_tap, _ = await loop.create_connection(lambda: Tap(events, marks), host, int(port))
    nats_tap.write(b'CONNECT {"verbose":false,"pedantic":false,"name":"bench tap"}\r\n')
    for sid, subject in enumerate(submit_subjects(job["host"], int(job["pid"])), 1):
        nats_tap.write(f"SUB {subject} {sid}\r\n".encode())
    nats_tap.write(b"PING\r\n")
    relay_marks = [("result", b"submit-result")]
    relay, _ = await loop.create_unix_connection(lambda: Tap(events, relay_marks), job["socket"])
    say({"ready": {"pid": os.getpid()}})
    commands = Commands()
    while (await commands.next())["command"] != "stop":
        say({"events": events})
    relay.close()
    nats_tap.close()


async def serve_worker(job: dict[str, Any]) -> None:
    """One answering bridge for every Pi of the fleet (in replica group ``group`` if given),
    until told to stop: each form answered with an explicit value as soon as it is seen; or,
    given ``think`` and ``capacity``, each after ``think`` seconds of the bridge's own work, at
    most ``capacity`` forms at once over all its Pis (a bridge's limit: its workers, its quota
    of a model)."""
    answered = 0
    think = float(job.get("think", 0.0))
    slots = asyncio.Semaphore(int(job.get("capacity", 1)))

    async def answer(client: BridgeClient, flow: FlowView) -> None:
        nonlocal answered
        if think:
            async with slots:
                await asyncio.sleep(think)  # the bridge's own work, not a synchronisation
        question = flow.questions[0]
        answer = AnswerBuilder(flow).select(question, question.value("b")).build()
        await client.respond(flow, answer, timeout=30)
        answered += 1

    async def handler(client: BridgeClient) -> None:
        if not think:
            async for flow in client.flows():
                await answer(client, flow)
            return
        working: set[asyncio.Task[None]] = set()
        try:
            async for flow in client.flows():
                task = asyncio.get_running_loop().create_task(answer(client, flow))
                working.add(task)
                task.add_done_callback(working.discard)
        finally:
            for task in list(working):
                task.cancel()
            await asyncio.gather(*working, return_exceptions=True)

    stop = asyncio.Event()
    async with open_fleet(job["url"], job.get("group")) as fleet:
        serving = asyncio.get_running_loop().create_task(serve_fleet(fleet, handler, stop))
        say({"ready": {"pid": os.getpid()}})
        commands = Commands()
        while (await commands.next())["command"] != "stop":
            say({"answered": answered})
        stop.set()
        await asyncio.wait_for(serving, 30)


ROLES: dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, None]]] = {
    "hosts": hosts_worker,
    "forwarders": forwarders_worker,
    "serve": serve_worker,
    "echo": echo_worker,
    "rtt": rtt_worker,
    "relay": relay_worker,
    "nats": nats_worker,
    "chain": chain_worker,
    "tap": tap_worker,
}


def main() -> int:
    role = ROLES.get(sys.argv[1])
    if role is None:
        raise SystemExit(f"unknown role {sys.argv[1]!r}")
    asyncio.run(role(json.loads(sys.argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
