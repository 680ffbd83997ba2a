"""Instruction counts per operation, under valgrind's callgrind: deterministic, unlike wall time.

Run: ``python bench/callgrind.py`` (all workloads) or ``python bench/callgrind.py sdk hand``;
``--quick`` for fewer operations. Needs ``valgrind`` on PATH. One run prints, per workload, the
instructions one operation costs and, for the SDK, its ratio to the hand-written bridge.

Each workload runs twice in a fresh interpreter under ``valgrind --tool=callgrind``, once with
``--ops`` operations and once with ``--ops`` plus ``--base`` more; the difference of the two
totals divided by ``--base`` is the cost of one operation, with the interpreter's start-up, the
imports and the first warm-up operations cancelled out. ``PYTHONHASHSEED=0`` fixes the string
hashes, so two runs of the same tree give the same count to a few instructions: compare a change
with its parent by running this on both (``git stash``, or a second worktree).

Workloads (each operation on a fresh 3-question form, GC on, as in bench/core.py and sdk.py):

* ``core``: ``host.start`` then a valid submit decoded from bytes and emitted on the bus
  (``started``, ``completed`` and ``submit-result`` emitted);
* ``core-invalid``: a submit refused as ``invalid_answer`` (an unknown option value) on an open
  flow, decoded from bytes;
* ``sdk``: the SDK round trip of bench/sdk.py (``host.start``, ``client.flows()``,
  ``AnswerBuilder``, ``await client.respond``) over the in-process transport;
* ``hand``: the same round trip written by hand on the bus (bench/sdk.py's floor);
* ``spec-core`` / ``spec-peer``: one case of bench/core.py's "open + valid submit" mix of the
  spec's examples (open a form, then its first accepted submit, decoded from bytes), by the
  core and by the plain-dict peer (bench/peer_host.py); ``spec-core-invalid`` /
  ``spec-peer-invalid``: one of its refused submits on an open form.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
WORKLOADS = (
    "core",
    "core-invalid",
    "sdk",
    "hand",
    "spec-core",
    "spec-peer",
    "spec-core-invalid",
    "spec-peer-invalid",
)
_COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)


def _core(ops: int) -> None:
    import msgspec
    from common import THREE_ANSWERS, THREE_QUESTIONS

    from pi_ask_core import SUBMIT, SUBMIT_RESULT, FlowHost, LocalEventBus

    bus = LocalEventBus()
    acks: list[object] = []
    bus.on(SUBMIT_RESULT, acks.append)
    host = FlowHost(bus)
    raws = [
        msgspec.json.encode(
            {
                "version": 1,
                "requestId": f"r{i}",
                "flowId": f"tool:t{i}",
                "response": {"kind": "answer", "answers": THREE_ANSWERS},
            }
        )
        for i in range(ops)
    ]
    decode = msgspec.json.decode
    for i, raw in enumerate(raws):
        host.start(THREE_QUESTIONS, tool_call_id=f"t{i}")
        bus.emit(SUBMIT, decode(raw))
    if not all(getattr(ack, "ok", False) for ack in acks) or len(acks) != ops:
        raise RuntimeError("not every submit was accepted")


def _core_invalid(ops: int) -> None:
    import msgspec
    from common import THREE_QUESTIONS

    from pi_ask_core import SUBMIT, SUBMIT_RESULT, FlowHost, LocalEventBus

    bus = LocalEventBus()
    acks: list[object] = []
    bus.on(SUBMIT_RESULT, acks.append)
    host = FlowHost(bus)
    host.start(THREE_QUESTIONS, tool_call_id="t")
    answers = {"goal": {"values": ["nope"]}}
    raws = [
        msgspec.json.encode(
            {
                "version": 1,
                "requestId": f"r{i}",
                "flowId": "tool:t",
                "response": {"kind": "answer", "answers": answers},
            }
        )
        for i in range(ops)
    ]
    decode = msgspec.json.decode
    for raw in raws:
        bus.emit(SUBMIT, decode(raw))
    if any(getattr(ack, "ok", True) for ack in acks) or len(acks) != ops:
        raise RuntimeError("not every submit was refused")


def _sdk(ops: int) -> None:
    from sdk import client_round_trips

    asyncio.run(client_round_trips(ops))


def _hand(ops: int) -> None:
    from sdk import hand_round_trips

    hand_round_trips(ops)


def _spec(side: str, valid: bool) -> Callable[[int], None]:
    def run(ops: int) -> None:
        from core import Side, spec_cases

        forms, valid_cases, invalid_cases = spec_cases()
        implementation = Side(side, forms)
        if valid:
            calls = [implementation.open_and_submit(case) for case in valid_cases]
        else:
            for start in implementation.starts.values():
                start()
            calls = [implementation.submit(case) for case in invalid_cases]
        for i in range(ops):
            calls[i % len(calls)]()

    return run


RUN: dict[str, Callable[[int], None]] = {
    "core": _core,
    "core-invalid": _core_invalid,
    "sdk": _sdk,
    "hand": _hand,
    "spec-core": _spec("core", True),
    "spec-peer": _spec("peer", True),
    "spec-core-invalid": _spec("core", False),
    "spec-peer-invalid": _spec("peer", False),
}


def instructions(workload: str, ops: int) -> int:
    """Instructions callgrind counts for a fresh interpreter running ``ops`` operations."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(BENCH.parent), str(BENCH), env.get("PYTHONPATH")])
    )
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--run",
            workload,
            str(ops),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run of {workload} failed:\n{done.stderr[-2000:]}")
    return int(found[1])


def per_op(workload: str, ops: int, base: int) -> float:
    return (instructions(workload, ops + base) - instructions(workload, ops)) / base


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("workloads", nargs="*", choices=[[], *WORKLOADS], default=[])
    parser.add_argument("--ops", type=int, default=300, help="warm-up operations (cancelled)")
    parser.add_argument("--base", type=int, default=1000, help="operations measured")
    parser.add_argument("--quick", action="store_true", help="--ops 50 --base 100")
    parser.add_argument("--run", nargs=2, metavar=("WORKLOAD", "OPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        RUN[args.run[0]](int(args.run[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("bench/callgrind.py needs valgrind on PATH", file=sys.stderr)
        return 2
    ops, base = (50, 100) if args.quick else (args.ops, args.base)
    names = args.workloads or list(WORKLOADS)
    counts: dict[str, float] = {}
    print(f"instructions per operation (callgrind; {base} operations after {ops}):")
    for name in names:
        counts[name] = per_op(name, ops, base)
        print(f"  {name:13s} {counts[name]:12,.0f}")
    for ours, floor in (
        ("sdk", "hand"),
        ("spec-core", "spec-peer"),
        ("spec-core-invalid", "spec-peer-invalid"),
    ):
        if ours in counts and floor in counts:
            print(f"  {ours}/{floor} ratio {counts[ours] / counts[floor]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
