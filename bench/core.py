"""Benchmark of pi_ask_core: every figure beside its floor or peer from the same run.

Run: ``python bench/core.py`` (``--quick`` for a short run; ``--smoke`` a short run that prints
the verdicts but exits 0 on a miss, as CI runs it). GC stays on throughout. One run prints:

* valid submits on a 3-question form: microseconds per resolved submit (bytes -> decode ->
  ``FlowHost`` -> ``completed`` and ``submit-result`` emitted; forms opened beforehand, untimed),
  beside the floor ``msgspec.json.decode`` of the same bytes;
* the spec's example submits (``examples.json``, form G aside: its flow id is random), each form
  on its own bus with ONE host, beside the peer: ``bench/peer_host.py``, a plain-dict host
  written from the spec (``json`` module, no msgspec) doing the same work on its own bus:

  - *open + valid submit*: open a fresh flow (``start``, ``started`` emitted) then resolve the
    first accepted submit of each example (``completed`` + ``submit-result``);
  - *invalid submit*: each refused submit that the spec makes on an open flow (the flow stays
    open and unchanged, so every one meets the same fresh state);

  the submits arrive as bytes and are decoded by each side's own JSON decoder, and every bus has
  one listener per channel (as a bridge would). Before timing, each case is run once on both and
  their acknowledgements and results are compared (messages aside: the core words its own).
  A context line (no target) times the peer once more with msgspec's decoder instead of
  ``json``: how much of the core's lead is the decoder, and how its own rule path compares;
* ``import pi_ask_core`` next to ``import msgspec``, each in fresh interpreters, interleaved.

Targets (each a ratio measured side by side in the run): core <= 0.5x the peer for open + valid
submit and for invalid submit; import ratio <= 1.3. The valid submits per second on the
3-question form are context. Exit status 1 names every missed target.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import peer_host
from common import ROOT, THREE_ANSWERS, THREE_QUESTIONS, compare_imports

from pi_ask_core import COMPLETED, STARTED, SUBMIT, SUBMIT_RESULT, FlowHost, LocalEventBus

sys.path.insert(0, str(ROOT))  # the spec is found as the tests find it (tests/spec_examples.py)
from tests.spec_examples import spec_dir

SPEC = spec_dir() / "examples.json"

PEER_TARGET = 0.5
IMPORT_TARGET = 1.3

Call = Callable[[], object]


def submit_bytes(flow_id: str, response: object, request_id: str) -> bytes:
    return msgspec.json.encode(
        {"version": 1, "requestId": request_id, "flowId": flow_id, "response": response}
    )


def time_calls(calls: Sequence[Call]) -> float:
    """Seconds per call over the list, GC left on."""
    start = time.perf_counter()
    for call in calls:
        call()
    return (time.perf_counter() - start) / len(calls)


# --- the 3-question form ------------------------------------------------------------------------


def bench_valid(count: int, repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` (resolve, floor) seconds per valid submit completing a 3-question flow."""
    payloads = [
        submit_bytes(f"tool:t{i}", {"kind": "answer", "answers": THREE_ANSWERS}, f"r{i}")
        for i in range(count)
    ]
    decode = msgspec.json.decode
    best_resolve = best_floor = float("inf")
    for _ in range(repeat):
        bus = LocalEventBus()
        acks: list[object] = []
        bus.on(SUBMIT_RESULT, acks.append)
        host = FlowHost(bus)
        for i in range(count):
            host.start(THREE_QUESTIONS, tool_call_id=f"t{i}")
        emit = bus.emit
        start = time.perf_counter()
        for raw in payloads:
            emit(SUBMIT, decode(raw))
        best_resolve = min(best_resolve, (time.perf_counter() - start) / count)
        if len(acks) != count or not all(getattr(a, "ok", False) for a in acks):
            raise RuntimeError("not every benchmark submit was accepted")
        start = time.perf_counter()
        for raw in payloads:
            decode(raw)
        best_floor = min(best_floor, (time.perf_counter() - start) / count)
    return best_resolve, best_floor


# --- the spec's examples, core beside the peer --------------------------------------------------


@dataclass(frozen=True)
class Case:
    form: str
    raw: bytes
    label: str


def spec_cases() -> tuple[dict[str, Any], list[Case], list[Case]]:
    """The spec's forms; its first accepted submit per example (valid), and the refused submits
    it makes while the flow is still open (invalid)."""
    data = json.loads(SPEC.read_text(encoding="utf-8"))
    valid: list[Case] = []
    invalid: list[Case] = []
    for example in data["examples"]:
        if example["form"] == "G":
            continue  # random flow id
        for n, step in enumerate(example["steps"], 1):
            case = Case(
                example["form"], json.dumps(step["request"]).encode(), f"ex{example['id']}.{n}"
            )
            if step["emitted"][-1]["data"]["ok"]:
                valid.append(case)
                break  # the flow is completed: later steps meet a closed flow
            invalid.append(case)
    return data["forms"], valid, invalid


def keep_last(last: dict[str, object], channel: str) -> Callable[[object], None]:
    """A listener that keeps only the latest payload (nothing piles up for the GC to walk)."""

    def listener(data: object) -> None:
        last[channel] = data

    return listener


class Side:
    """One implementation (core or peer), ONE host per bus per form, a listener per channel."""

    def __init__(self, name: str, forms: dict[str, Any], *, msgspec_decode: bool = False) -> None:
        self.name = name
        self.forms = forms
        # The core decodes with msgspec; the peer with json unless told otherwise (the context
        # line "peer, msgspec decode": what the peer's own rule path costs on the core's decoder).
        self._decode: Callable[[bytes], object] = (
            msgspec.json.decode if name == "core" or msgspec_decode else json.loads
        )
        self.last: dict[str, object] = {}
        self.emits: dict[str, Callable[[str, object], None]] = {}
        self.starts: dict[str, Call] = {}
        for form, spec in forms.items():
            self._add(form, spec)

    def _add(self, form: str, spec: dict[str, Any]) -> None:
        as_multi = bool(spec.get("presentSingleAsMulti", False))
        params, tool_call_id = spec["params"], spec.get("toolCallId")
        last = self.last
        if self.name == "core":
            bus = LocalEventBus()
            host = FlowHost(bus, present_single_as_multi=as_multi)
            for channel in (STARTED, COMPLETED, SUBMIT_RESULT):
                bus.on(channel, keep_last(last, channel))
            self.emits[form] = bus.emit
            self.starts[form] = lambda: host.start(params, tool_call_id=tool_call_id)
        else:
            peer_bus = peer_host.PeerBus()
            peer = peer_host.PeerHost(peer_bus, present_single_as_multi=as_multi)
            for channel in (STARTED, COMPLETED, SUBMIT_RESULT):
                peer_bus.on(channel, keep_last(last, channel))
            self.emits[form] = peer_bus.emit
            self.starts[form] = lambda: peer.start(params, tool_call_id)

    def decode(self, raw: bytes) -> object:
        return self._decode(raw)

    def open_and_submit(self, case: Case) -> Call:
        start, emit = self.starts[case.form], self.emits[case.form]
        decode = self._decode
        raw = case.raw

        def call() -> None:
            start()
            emit(SUBMIT, decode(raw))

        return call

    def submit(self, case: Case) -> Call:
        emit = self.emits[case.form]
        decode = self._decode
        raw = case.raw
        return lambda: emit(SUBMIT, decode(raw))

    def outcome(self, case: Case, *, open_first: bool) -> tuple[object, object]:
        """(ack, completed result) of one case as builtins, messages and timestamps aside."""
        self.last.clear()
        if open_first:
            self.starts[case.form]()
        self.emits[case.form](SUBMIT, self.decode(case.raw))
        ack = msgspec.to_builtins(self.last.get(SUBMIT_RESULT))
        if isinstance(ack, dict):
            ack.pop("message", None)
        completed = msgspec.to_builtins(self.last.get(COMPLETED))
        result = completed.get("result") if isinstance(completed, dict) else None
        if isinstance(result, dict) and "elaboration" in result:
            result["elaboration"].pop("instruction")  # the core words its own (A27)
        return ack, result


def check_same_work(forms: dict[str, Any], valid: list[Case], invalid: list[Case]) -> None:
    """Both sides give the same acknowledgements and results for every benchmarked case."""
    for cases, open_first in ((valid, True), (invalid, False)):
        core, peer = Side("core", forms), Side("peer", forms)
        if not open_first:
            for side in (core, peer):
                for start in side.starts.values():
                    start()
        for case in cases:
            ours, theirs = (
                core.outcome(case, open_first=open_first),
                peer.outcome(case, open_first=open_first),
            )
            if not isinstance(ours[0], dict) or (open_first and not isinstance(ours[1], dict)):
                raise RuntimeError(f"no acknowledgement or result recorded for {case.label}")
            if ours != theirs:
                raise RuntimeError(f"core and peer differ on {case.label}: {ours} != {theirs}")


SIDES: tuple[tuple[str, str, bool], ...] = (
    ("core", "core", False),
    ("peer", "peer", False),
    ("peer-msgspec", "peer", True),
)
"""(key, implementation, msgspec decode) of each side timed on the spec mix."""


def bench_spec_mix(repeat: int, rounds: int) -> tuple[dict[str, float], int, int]:
    """Best-of-``repeat`` seconds per call for ``"<side>-valid"`` and ``"<side>-invalid"`` of
    each of ``SIDES``, and the number of valid and invalid cases; the sides' runs interleave."""
    forms, valid, invalid = spec_cases()
    check_same_work(forms, valid, invalid)
    best: dict[str, float] = {}
    for _ in range(repeat):
        for key, name, msgspec_decode in SIDES:
            side = Side(name, forms, msgspec_decode=msgspec_decode)
            calls = [side.open_and_submit(c) for _ in range(rounds) for c in valid]
            best[f"{key}-valid"] = min(best.get(f"{key}-valid", float("inf")), time_calls(calls))
            side = Side(name, forms, msgspec_decode=msgspec_decode)
            for start in side.starts.values():
                start()
            calls = [side.submit(c) for _ in range(rounds) for c in invalid]
            best[f"{key}-invalid"] = min(
                best.get(f"{key}-invalid", float("inf")), time_calls(calls)
            )
    return best, len(valid), len(invalid)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a short run")
    parser.add_argument(
        "--smoke", action="store_true", help="--quick, and exit 0 on a missed target (CI)"
    )
    args = parser.parse_args()
    quick = args.quick or args.smoke
    count, repeat, rounds, samples = (2_000, 2, 20, 5) if quick else (20_000, 5, 300, 21)
    missed: list[str] = []

    resolve, floor = bench_valid(count, repeat)
    print(
        f"context: 3-question form, valid submits: {resolve * 1e6:7.2f} us/submit "
        f"({1 / resolve:,.0f}/s)"
    )
    print(
        f"  floor msgspec.json.decode:       {floor * 1e6:7.2f} us  ratio {resolve / floor:5.1f}x"
    )

    best, n_valid, n_invalid = bench_spec_mix(repeat, rounds)
    for label, kind, n in (
        ("open + valid submit", "valid", n_valid),
        ("invalid submit", "invalid", n_invalid),
    ):
        ours, theirs = best[f"core-{kind}"], best[f"peer-{kind}"]
        ratio = ours / theirs
        ok = ratio <= PEER_TARGET
        print(
            f"spec examples, {label + ':':21s}{ours * 1e6:7.2f} us  peer {theirs * 1e6:7.2f} us  "
            f"ratio {ratio:4.2f}x (target <= {PEER_TARGET}x; {n} cases) {verdict(ok)}"
        )
        # Context, no target: the peer's rule path on the core's decoder shows how much of the
        # core's lead is msgspec against json.
        rules = best[f"peer-msgspec-{kind}"]
        print(
            f"  context: peer with msgspec decode {rules * 1e6:7.2f} us ({rules / theirs:4.2f}x "
            f"the peer; the core is {ours / rules:4.2f}x it)"
        )
        if not ok:
            missed.append(f"spec {label} {ratio:.2f}x the peer > {PEER_TARGET}x")

    base, core = compare_imports("msgspec", "pi_ask_core", samples)
    import_ok = core / base <= IMPORT_TARGET
    print(
        f"import msgspec {base * 1e3:6.2f} ms, import pi_ask_core {core * 1e3:6.2f} ms: "
        f"ratio {core / base:4.2f}x (target <= {IMPORT_TARGET}x, median of {samples}) "
        f"{verdict(import_ok)}"
    )
    if not import_ok:
        missed.append(f"import ratio {core / base:.2f} > {IMPORT_TARGET}")
    print("targets met" if not missed else "TARGETS MISSED: " + "; ".join(missed))
    if args.smoke and missed:
        print("(--smoke: targets are not enforced)")
        return 0
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
