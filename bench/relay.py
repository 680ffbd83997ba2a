"""Benchmark of the relay path with a real Pi: SDK round trip beside its floor, and cold start.

Run: ``python bench/relay.py`` (``--legacy`` for Pi 0.74.2; ``--submits N``, ``--starts N``).
Needs Pi installed (``bash scripts/install-pi.sh``). One run prints:

* ``submit`` + ``await_result`` through ``BridgeClient`` over ``RelayTransport``: p50 / p99 over
  at least 1,000 submits, beside the floor measured in the same run: a bare asyncio client on the
  same socket writing the same bytes and reading lines until the matching ``submit-result``.
  Each submit is refused as ``invalid_answer`` (an unknown option value), which is a full round
  trip through the host's validation that keeps the form open; forms are opened beforehand,
  untimed, in batches, and SDK and floor rounds alternate on the same forms.
* Pi cold start to the first RPC response with and without the relay loaded, several runs each
  (alternating, shared warm TMPDIR), medians.

Targets: SDK p50 within 1.5x of the floor, SDK p99 under 1 ms; the relay adds at most 10% to
cold start.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from pi_ask_core import SubmitEvent  # noqa: E402
from pi_ask_sdk import BridgeClient, FlowView, SubmitRejected  # noqa: E402
from pi_ask_sdk.transports.relay import RelayTransport  # noqa: E402
from tests.integration.pi_process import (  # noqa: E402
    PiEnv,
    PiProcess,
    invalid_answer,
    pi_env,
    running_pi,
    single_question,
)

FORMS = 20
EMIT = b'{"type":"emit","channel":"pi-agent-ask:submit","data":'


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def sdk_round(client: BridgeClient, flows: list[FlowView], per_form: int) -> list[float]:
    out: list[float] = []
    clock = time.perf_counter
    for flow in flows:
        answer = invalid_answer(flow)
        for _ in range(per_form):
            start = clock()
            outcome = await client.await_result(await client.submit(flow, answer), timeout=5)
            out.append(clock() - start)
            assert isinstance(outcome, SubmitRejected), outcome
    return out


async def floor_round(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    flows: list[FlowView],
    per_form: int,
    prefix: str,
) -> list[float]:
    out: list[float] = []
    clock = time.perf_counter
    encode = msgspec.json.encode
    n = 0
    for flow in flows:
        response = invalid_answer(flow).to_wire()
        for _ in range(per_form):
            n += 1
            rid = f"{prefix}-{n}"
            line = EMIT + encode(
                SubmitEvent(request_id=rid, flow_id=flow.flow_id, response=response)
            )
            line += b"}\n"
            marker = b'"requestId":"' + rid.encode() + b'"'
            start = clock()
            writer.write(line)
            while True:
                got = await reader.readline()
                if not got:
                    raise RuntimeError("relay closed the floor connection")
                if marker in got and b"submit-result" in got:
                    break
            out.append(clock() - start)
    return out


async def latency(pi: PiProcess, submits: int) -> tuple[list[float], list[float]]:
    async with BridgeClient(RelayTransport(pi.socket_path)) as client:
        stream = client.flows()
        ids = [pi.open_form(single_question()) for _ in range(FORMS)]
        views: dict[str, FlowView] = {}
        while len(views) < len(ids):
            view = await stream.next(timeout=5)
            views[view.flow_id] = view
        flows = [views[i] for i in ids]
        reader, writer = await asyncio.open_unix_connection(str(pi.socket_path))
        await reader.readline()  # hello (+ replays, skipped by the matcher)
        rounds = 4
        per_form = max(1, -(-submits // (rounds * FORMS)))
        warm = max(1, per_form // 4)
        await sdk_round(client, flows, warm)
        await floor_round(reader, writer, flows, warm, "warm")
        sdk: list[float] = []
        floor: list[float] = []
        gc.disable()
        try:
            for r in range(rounds):
                sdk += await sdk_round(client, flows, per_form)
                floor += await floor_round(reader, writer, flows, per_form, f"floor{r}")
        finally:
            gc.enable()
        writer.close()
        await writer.wait_closed()
        for flow_id in ids:
            pi.cancel_form(flow_id)
        return sdk, floor


def cold_start(env: PiEnv, workdir: Path, shared_tmp: Path, relay: bool) -> float:
    pi = PiProcess(env, workdir, shared_tmp=shared_tmp, relay=relay)
    started = time.perf_counter()
    try:
        pi.start()
        pi.send({"type": "get_state", "id": "cold"})
        pi.wait_record(lambda r: r.get("type") == "response" and r.get("id") == "cold")
        return time.perf_counter() - started
    finally:
        pi.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--legacy", action="store_true", help="Pi 0.74.2 on node 20")
    parser.add_argument("--submits", type=int, default=1200, help="submits per side (>= 1000)")
    parser.add_argument("--starts", type=int, default=7, help="cold starts per variant")
    args = parser.parse_args(argv)
    env = pi_env("legacy" if args.legacy else "current")
    print(f"Pi {env.version} ({env.flavour}), node {env.node}")
    with tempfile.TemporaryDirectory(prefix="pibench") as tmp:
        base = Path(tmp)
        shared = base / "tmp"
        with running_pi(env, base / "lat", shared_tmp=shared) as pi:
            sdk, floor = asyncio.run(latency(pi, args.submits))
        p50s, p99s = percentile(sdk, 0.5) * 1e3, percentile(sdk, 0.99) * 1e3
        p50f, p99f = percentile(floor, 0.5) * 1e3, percentile(floor, 0.99) * 1e3
        print(f"round trip, {len(sdk)} submits each (ms):")
        print(f"  SDK  (BridgeClient/RelayTransport)  p50 {p50s:.3f}  p99 {p99s:.3f}")
        print(f"  floor (bare asyncio, same bytes)    p50 {p50f:.3f}  p99 {p99f:.3f}")
        print(f"  SDK/floor p50 ratio {p50s / p50f:.2f} (target <= 1.5); SDK p99 target < 1 ms")

        with_relay: list[float] = []
        without: list[float] = []
        cold_start(env, base / "warm", shared, True)  # warm the jiti cache of both files
        for i in range(args.starts):
            with_relay.append(cold_start(env, base / f"w{i}", shared, True))
            without.append(cold_start(env, base / f"n{i}", shared, False))
        mw, mn = statistics.median(with_relay) * 1e3, statistics.median(without) * 1e3
        print(f"cold start to first RPC response, median of {args.starts} (ms):")
        print(f"  with relay {mw:.0f}   without {mn:.0f}   ratio {mw / mn:.3f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
