"""Benchmark of pi_ask_core: resolved submits per second and import time, each beside its floor.

Run: ``python bench/core.py`` (``--quick`` for a short smoke run). One run prints:

* microseconds per resolved submit (bytes -> decode -> FlowHost -> ``completed`` and
  ``submit-result`` emitted) for valid submits on a 3-question form, for the valid and the invalid
  submits of the spec's examples, and the floor: ``msgspec.json.decode`` of the same bytes;
* ``import pi_ask_core`` next to ``import msgspec``, each in fresh interpreters, interleaved.

Targets (issue #2): >= 30,000 resolved valid submits/s on a 3-question form; import ratio < 1.3.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import msgspec
from common import ROOT, THREE_ANSWERS, THREE_QUESTIONS, compare_imports

from pi_ask_core import SUBMIT, FlowHost, LocalEventBus

sys.path.insert(0, str(ROOT))  # the spec is found as the tests find it (tests/spec_examples.py)
from tests.spec_examples import spec_dir

SPEC = spec_dir() / "examples.json"


def submit_bytes(flow_id: str, response: object, request_id: str) -> bytes:
    return msgspec.json.encode(
        {"version": 1, "requestId": request_id, "flowId": flow_id, "response": response}
    )


def time_per_call(calls: Sequence[Callable[[], object]], repeat: int) -> float:
    """Best-of-``repeat`` seconds per call over the list (GC off while timing, as timeit does)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for call in calls:
                call()
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        best = min(best, elapsed / len(calls))
    return best


def emit_decoded(bus: LocalEventBus, raw: bytes) -> None:
    """What a transport does with one submit line: decode it and put it on the bus."""
    bus.emit(SUBMIT, msgspec.json.decode(raw))


def open_and_submit(open_flow: Callable[[], object], bus: LocalEventBus, raw: bytes) -> None:
    open_flow()
    emit_decoded(bus, raw)


def bench_valid(count: int, repeat: int) -> tuple[float, float]:
    """(resolve, floor) seconds per valid submit that completes a 3-question flow."""
    best_resolve = float("inf")
    payloads = [
        submit_bytes(f"tool:t{i}", {"kind": "answer", "answers": THREE_ANSWERS}, f"r{i}")
        for i in range(count)
    ]
    acks: list[object] = []
    for _ in range(repeat):
        bus = LocalEventBus()
        bus.on("pi-agent-ask:submit-result", acks.append)
        host = FlowHost(bus)
        for i in range(count):
            host.start(THREE_QUESTIONS, tool_call_id=f"t{i}")
        acks.clear()
        calls = [partial(emit_decoded, bus, raw) for raw in payloads]
        best_resolve = min(best_resolve, time_per_call(calls, 1))
        if len(acks) != count or not all(getattr(a, "ok", False) for a in acks):
            raise RuntimeError("not every benchmark submit was accepted")
    floor = time_per_call([partial(msgspec.json.decode, raw) for raw in payloads], repeat)
    return best_resolve, floor


def spec_requests() -> tuple[dict[str, Any], list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """The spec's forms, and its example submits split into (form, bytes) valid and invalid."""
    data = json.loads(SPEC.read_text(encoding="utf-8"))
    valid: list[tuple[str, bytes]] = []
    invalid: list[tuple[str, bytes]] = []
    for example in data["examples"]:
        if example["form"] == "G":
            continue  # random flow id
        for step in example["steps"]:
            ack = step["emitted"][-1]["data"]
            target = valid if ack["ok"] else invalid
            target.append((example["form"], msgspec.json.encode(step["request"])))
    return data["forms"], valid, invalid


def _hosts(bus: LocalEventBus, forms: dict[str, Any]) -> dict[str, FlowHost]:
    return {
        name: FlowHost(bus, present_single_as_multi=spec.get("presentSingleAsMulti", False))
        for name, spec in forms.items()
    }


def bench_spec_mix(repeat: int, rounds: int) -> tuple[float, float, float, float]:
    """(valid, valid floor, invalid, invalid floor) seconds per submit over the spec's examples.

    A valid submit completes its flow, so each is preceded by opening one; the time of opening
    alone, measured the same way, is subtracted. Invalid submits leave their flow open.
    """
    forms, valid, invalid = spec_requests()

    def opener(hosts: dict[str, FlowHost], name: str) -> Callable[[], object]:
        spec = forms[name]
        return lambda: hosts[name].start(spec["params"], tool_call_id=spec["toolCallId"])

    best_valid = best_invalid = float("inf")
    for _ in range(repeat):
        bus = LocalEventBus()
        hosts = _hosts(bus, forms)
        opening = time_per_call([opener(hosts, n) for _ in range(rounds) for n, _ in valid], 1)
        bus = LocalEventBus()
        hosts = _hosts(bus, forms)
        paired = [
            partial(open_and_submit, opener(hosts, n), bus, raw)
            for _ in range(rounds)
            for n, raw in valid
        ]
        best_valid = min(best_valid, max(time_per_call(paired, 1) - opening, 0.0))
        bus = LocalEventBus()
        hosts = _hosts(bus, forms)
        for name in forms:
            if "toolCallId" in forms[name]:
                opener(hosts, name)()
        calls = [partial(emit_decoded, bus, raw) for _ in range(rounds) for _, raw in invalid]
        best_invalid = min(best_invalid, time_per_call(calls, 1))
    times = repeat * rounds
    floor_valid = time_per_call([partial(msgspec.json.decode, raw) for _, raw in valid], times)
    floor_invalid = time_per_call([partial(msgspec.json.decode, raw) for _, raw in invalid], times)
    return best_valid, floor_valid, best_invalid, floor_invalid


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    args = parser.parse_args()
    count, repeat, rounds, samples = (2_000, 2, 5, 5) if args.quick else (20_000, 5, 50, 21)

    resolve, floor = bench_valid(count, repeat)
    print(
        f"3-question form, valid submits: {resolve * 1e6:7.2f} us/submit "
        f"({1 / resolve:,.0f}/s; target >= 30,000/s)"
    )
    print(
        f"  floor msgspec.json.decode:       {floor * 1e6:7.2f} us  ratio {resolve / floor:5.1f}x"
    )
    valid, valid_floor, invalid, invalid_floor = bench_spec_mix(repeat, rounds)
    print(
        f"spec examples, valid mix:         {valid * 1e6:7.2f} us/submit  "
        f"floor {valid_floor * 1e6:5.2f} us  ratio {valid / valid_floor:5.1f}x"
    )
    print(
        f"spec examples, invalid mix:       {invalid * 1e6:7.2f} us/submit  "
        f"floor {invalid_floor * 1e6:5.2f} us  ratio {invalid / invalid_floor:5.1f}x"
    )
    base, core = compare_imports("msgspec", "pi_ask_core", samples)
    print(
        f"import msgspec {base * 1e3:6.2f} ms, import pi_ask_core {core * 1e3:6.2f} ms: "
        f"ratio {core / base:4.2f}x (target < 1.3x, median of {samples})"
    )
    ok = 1 / resolve >= 30_000 and core / base < 1.3
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
