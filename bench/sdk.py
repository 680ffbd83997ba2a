"""Benchmark of pi_ask_sdk: client round trips, import time and retained memory, beside floors.

Run: ``python bench/sdk.py`` (``--quick`` for a short run; ``--smoke`` a short run that prints
the verdicts but exits 0 on a miss, as CI runs it). GC stays on. One run prints:

* microseconds per in-process round trip on a fresh 3-question form (``FlowHost`` +
  ``LocalEventBus``): the host opens the form (``host.start``, which emits ``started``), the
  bridge answers it and has the verdict and the completion. With the SDK (``MemoryTransport``):
  the client turns ``started`` into a ``FlowView``, the bridge takes it from ``client.flows()``,
  builds its answer with ``AnswerBuilder`` and awaits ``client.respond()``. Beside it the floor:
  the same loop written by hand on the same bus (``hand_round_trips``: the code a bridge author
  would write without the SDK: keep each ``started`` event, take the values from its options,
  emit a dict, match the acknowledgement and the completion). The host's ``start``, timed alone,
  gives the parts as context;
* ``import pi_ask_sdk`` next to ``import msgspec, asyncio``, each in fresh interpreters,
  interleaved, median, with the bytecode cache warmed (and the modules of ours that cost most);
* memory: 10,000 flows opened and answered through one client after a warm-up: the growth of the
  gc object count, of tracemalloc's traced bytes and of the process's resident set (RSS).

Targets: SDK round trip <= 1.5x the hand-written one; import ratio <= 1.3; memory flat (< 0.1
objects and < 8 bytes per flow: anything kept per flow is at least one object and tens of bytes;
RSS growth < 1 MiB). Exit status 1 names every missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import subprocess
import sys
import time
import tracemalloc
from collections import deque
from dataclasses import astuple, dataclass

from common import IMPORT_ENV, ROOT, THREE_QUESTIONS, compare_imports

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    CompletedEvent,
    FlowHost,
    LocalEventBus,
    StartedEvent,
    SubmitAck,
    SubmitRejection,
)
from pi_ask_core.protocol import AskQuestion
from pi_ask_sdk import Answer, AnswerBuilder, BridgeClient, FlowView, SubmitAccepted
from pi_ask_sdk.transports import MemoryTransport

ROUND_TRIP_TARGET = 1.5
IMPORT_TARGET = 1.3
OBJECTS_PER_FLOW_TARGET = 0.1
BYTES_PER_FLOW_TARGET = 8.0
RSS_GROWTH_TARGET = 1 << 20
"""Bytes the resident set may grow over the measured flows (allocator noise, not per flow)."""


def build_answer(flow: FlowView) -> Answer:
    """The same answer as bench/core.py's, built from the form's own values."""
    goal, constraints, scope = (flow.question(q) for q in ("goal", "constraints", "scope"))
    return (
        AnswerBuilder(flow)
        .select(goal, goal.value("fast"))
        .note(goal, "keep it quick")
        .select(constraints, constraints.value("tests"), constraints.value("small"))
        .option_note(constraints, constraints.value("tests"), "unit only")
        .select(scope, scope.value("code"))
        .build()
    )


def _timed(start: float) -> float:
    return time.perf_counter() - start


# --- round trips --------------------------------------------------------------------------------
#
# GC stays on. Each timed round trip is the host opening a form and a bridge answering it: with
# the SDK, the ``started`` event reaching the client and becoming a ``FlowView``, the bridge
# taking it from ``client.flows()``, building its answer with ``AnswerBuilder`` and ``await
# client.respond(...)`` (submit + await_result); by hand, the least code that does the same on
# the bus. The host's work (``start``, and judging the submit) is in both.


@dataclass
class Split:
    """Seconds per round trip: ``start`` (host.start, which delivers ``started`` and so builds
    the client's ``FlowView``), ``view`` (taking it from ``client.flows()``), ``build``
    (``AnswerBuilder``), ``respond`` (``client.respond``)."""

    start: float = 0.0
    view: float = 0.0
    build: float = 0.0
    respond: float = 0.0

    @property
    def total(self) -> float:
        return self.start + self.view + self.build + self.respond


async def client_round_trips(count: int) -> Split:
    """Seconds per SDK round trip over ``count`` fresh forms (host.start included), in parts."""
    bus = LocalEventBus()
    host = FlowHost(bus)
    accepted = 0
    split = Split()
    clock = time.perf_counter
    async with BridgeClient(MemoryTransport(bus, host)) as client:
        stream = client.flows()
        for i in range(count):
            t0 = clock()
            host.start(THREE_QUESTIONS, tool_call_id=f"t{i}")
            t1 = clock()
            flow = await stream.next(timeout=5)
            t2 = clock()
            answer = build_answer(flow)
            t3 = clock()
            outcome = await client.respond(flow, answer, timeout=5)
            t4 = clock()
            split.start += t1 - t0
            split.view += t2 - t1
            split.build += t3 - t2
            split.respond += t4 - t3
            accepted += isinstance(outcome, SubmitAccepted)
    if accepted != count:
        raise RuntimeError(f"only {accepted} of {count} client submits were accepted")
    return Split(*(part / count for part in astuple(split)))


def host_starts(count: int) -> float:
    """Seconds per ``host.start`` of the same form on a bus with no client.

    Each flow is disposed right after its (timed) start, untimed, so open flows do not pile up:
    in the client loop every flow is answered, and 10,000 open flows would make the GC and so
    this subtracted figure slower than there, flattering the SDK.
    """
    host = FlowHost(LocalEventBus())
    clock = time.perf_counter
    total = 0.0
    for i in range(count):
        t0 = clock()
        handle = host.start(THREE_QUESTIONS, tool_call_id=f"t{i}")
        total += clock() - t0
        handle.dispose()
    return total / count


def _pick(question: AskQuestion, value: str) -> str:
    """The option value ``value`` of ``question``, taken from the form (never made up)."""
    for option in question.options:
        if option.value == value:
            return option.value
    raise LookupError(value)


def hand_round_trips(count: int) -> float:
    """Seconds per round trip of the least a bridge can do by hand on the same bus (the floor):
    keep each ``started`` event as it is, take the same answer's values from its options, emit
    a dict and match the acknowledgement by ``requestId`` and ``flowId`` and the completion by
    ``flowId``. No views, no builder checks, no asyncio, no outcome values; the host's
    ``start`` is included, as in the SDK's loop."""
    bus = LocalEventBus()
    host = FlowHost(bus)
    started: deque[StartedEvent] = deque()
    verdicts: dict[str, list[object]] = {}
    completed: set[str] = set()

    # Checked as any bridge on a shared bus checks what it is handed.
    def on_started(event: object) -> None:
        if isinstance(event, StartedEvent):
            started.append(event)

    def on_result(ack: object) -> None:
        if isinstance(ack, (SubmitAck, SubmitRejection)):
            waiting = verdicts.get(ack.request_id)
            if waiting is not None and waiting[0] == ack.flow_id:
                waiting.append(ack)

    def on_completed(event: object) -> None:
        if isinstance(event, CompletedEvent):
            completed.add(event.flow_id)

    bus.on(STARTED, on_started)
    bus.on(SUBMIT_RESULT, on_result)
    bus.on(COMPLETED, on_completed)
    accepted = 0
    clock = time.perf_counter
    start = clock()
    for i in range(count):
        host.start(THREE_QUESTIONS, tool_call_id=f"t{i}")
        event = started.popleft()
        goal, constraints, scope = event.questions
        tests = _pick(constraints, "tests")
        answers = {
            "goal": {"values": [_pick(goal, "fast")], "note": "keep it quick"},
            "constraints": {
                "values": [tests, _pick(constraints, "small")],
                "optionNotes": {tests: "unit only"},
            },
            "scope": {"values": [_pick(scope, "code")]},
        }
        rid = f"bridge-{os.urandom(16).hex()}"
        waiting = verdicts[rid] = [event.flow_id]
        bus.emit(
            SUBMIT,
            {
                "version": 1,
                "requestId": rid,
                "flowId": event.flow_id,
                "response": {"kind": "answer", "mode": "submit", "answers": answers},
            },
        )
        del verdicts[rid]
        if isinstance(waiting[-1], SubmitAck) and event.flow_id in completed:
            completed.remove(event.flow_id)
            accepted += 1
    elapsed = _timed(start)
    if accepted != count:
        raise RuntimeError("not every hand-written submit was accepted")
    return elapsed / count


def bench_round_trips(count: int, repeat: int) -> tuple[Split, float, float]:
    """Best-of-``repeat`` (SDK round trip in parts, host.start alone, by hand) seconds,
    interleaved."""
    best_client = Split(float("inf"))
    best_start = best_hand = float("inf")
    for _ in range(repeat):
        client = asyncio.run(client_round_trips(count))
        best_client = min(best_client, client, key=lambda split: split.total)
        best_start = min(best_start, host_starts(count))
        best_hand = min(best_hand, hand_round_trips(count))
    return best_client, best_start, best_hand


# --- import time --------------------------------------------------------------------------------

_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)$")


def costly_modules(top: int) -> list[tuple[str, float]]:
    """Our modules with the largest self import time (ms), after ``import msgspec, asyncio``."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import msgspec, asyncio; import pi_ask_sdk"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=IMPORT_ENV,
    )
    found = [
        (match[4], int(match[1]) / 1000)
        for match in map(_IMPORTTIME.match, out.stderr.splitlines())
        if match is not None and match[4].startswith(("pi_ask_", "dataclasses"))
    ]
    return sorted(found, key=lambda item: item[1], reverse=True)[:top]


# --- retained memory ----------------------------------------------------------------------------


def resident_bytes() -> int:
    """This process's resident set now (Linux ``/proc``), else its peak (``getrusage``)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


async def bench_memory(flows: int, warmup: int) -> tuple[int, int, int]:
    """(gc objects, traced bytes, resident bytes) retained by ``flows`` forms opened and
    answered through one client, after ``warmup`` of them (enough to fill the client's bounded
    memory of completed flow ids). Each flow is taken from ``client.flows()``, as a bridge
    does."""
    bus = LocalEventBus()
    host = FlowHost(bus)
    tracemalloc.start()
    try:
        async with BridgeClient(MemoryTransport(bus, host)) as client:
            stream = client.flows()
            serial = 0

            async def cycle(n: int) -> None:
                nonlocal serial
                for _ in range(n):
                    serial += 1
                    host.start(THREE_QUESTIONS, tool_call_id=f"m{serial}")
                    flow = await stream.next(timeout=5)
                    outcome = await client.respond(flow, build_answer(flow), timeout=5)
                    if not isinstance(outcome, SubmitAccepted):
                        raise RuntimeError(f"memory benchmark submit refused: {outcome}")

            await cycle(warmup)
            gc.collect()
            objects, traced = len(gc.get_objects()), tracemalloc.get_traced_memory()[0]
            resident = resident_bytes()
            await cycle(flows)
            gc.collect()
            return (
                len(gc.get_objects()) - objects,
                tracemalloc.get_traced_memory()[0] - traced,
                resident_bytes() - resident,
            )
    finally:
        tracemalloc.stop()


# --- report -------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a short run")
    parser.add_argument(
        "--smoke", action="store_true", help="--quick, and exit 0 on a missed target (CI)"
    )
    args = parser.parse_args()
    count, repeat, samples, flows, warmup = (
        (2_000, 2, 5, 2_000, 1_500) if args.quick or args.smoke else (10_000, 5, 21, 10_000, 2_000)
    )
    missed: list[str] = []

    client, opening, hand = bench_round_trips(count, repeat)
    sdk = client.total
    ratio = sdk / hand
    round_ok = ratio <= ROUND_TRIP_TARGET
    print(
        f"round trip with the SDK:          {sdk * 1e6:7.2f} us  ({1 / sdk:,.0f}/s; host.start,"
        f" flows(), AnswerBuilder, respond(); 3-question form, in-process)"
    )
    print(
        f"  floor by hand on the same bus:  {hand * 1e6:7.2f} us  ratio {ratio:4.2f}x "
        f"(target <= {ROUND_TRIP_TARGET}x) {verdict(round_ok)}"
    )
    print(
        f"  parts: host.start {opening * 1e6:.2f} us, started -> FlowView "
        f"{(client.start - opening) * 1e6:.2f} us, flows() {client.view * 1e6:.2f} us, "
        f"AnswerBuilder {client.build * 1e6:.2f} us, respond() {client.respond * 1e6:.2f} us "
        f"(incl. the host's share)"
    )
    if not round_ok:
        missed.append(f"round trip {ratio:.2f}x the hand-written one > {ROUND_TRIP_TARGET}x")

    base, sdk_import = compare_imports("msgspec, asyncio", "pi_ask_sdk", samples)
    import_ratio = sdk_import / base
    import_ok = import_ratio <= IMPORT_TARGET
    print(
        f"import pi_ask_sdk:                {sdk_import * 1e3:7.2f} ms  "
        f"floor import msgspec, asyncio {base * 1e3:6.2f} ms  ratio {import_ratio:4.2f} "
        f"(target <= {IMPORT_TARGET}) {verdict(import_ok)}"
    )
    costly = ", ".join(f"{name} {ms:.1f}" for name, ms in costly_modules(4))
    print(f"  largest self import times (ms):  {costly}")
    if not import_ok:
        missed.append(f"import ratio {import_ratio:.2f} > {IMPORT_TARGET}")

    objects, traced, resident = asyncio.run(bench_memory(flows, warmup))
    memory_ok = (
        objects / flows < OBJECTS_PER_FLOW_TARGET
        and traced / flows < BYTES_PER_FLOW_TARGET
        and resident < RSS_GROWTH_TARGET
    )
    print(
        f"retained after {flows:,} flows:      {objects:+d} gc objects, {traced:+,d} B traced, "
        f"RSS {resident / 1024:+,.0f} KiB ({objects / flows:+.3f} objects, "
        f"{traced / flows:+.2f} B per flow; target < {OBJECTS_PER_FLOW_TARGET} objects and "
        f"< {BYTES_PER_FLOW_TARGET:.0f} B per flow, RSS < {RSS_GROWTH_TARGET >> 10:,} KiB) "
        f"{verdict(memory_ok)}"
    )
    if not memory_ok:
        missed.append("memory grows with the flows")
    print("targets met" if not missed else "TARGETS MISSED: " + "; ".join(missed))
    if args.smoke and missed:
        print("(--smoke: targets are not enforced)")
        return 0
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
