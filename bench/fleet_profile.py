"""Where the fleet's round trip spends its CPU: py-spy samples of the forwarder and the bridge
while a bridge times ``client.respond`` through the fleet to a real Pi, as bench/fleet.py's
round trip does.

Run: ``python bench/fleet_profile.py [--count N] [--top K]``. Needs what bench/fleet.py needs,
and ``py-spy`` (``pip install py-spy``; sampling another process needs ptrace rights: root,
or ``kernel.yama.ptrace_scope=0``). Prints, for each of the two processes, its CPU time per
submit and the functions with the most samples, by their own samples and with their callees,
as a share of that process's samples (idle time in the event loop's ``select`` is not
sampled). Nothing here is a target: it shows where bench/fleet.py's time goes.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import (
    PI_HOST,
    RT_FORMS,
    Cpu,
    find_pi,
    start,
    workers,
)

from pi_ask_sdk.testing.nats_server import NatsServer
from pi_ask_sdk.testing.realpi import make_private_dir, running_pi, single_question


def py_spy() -> str:
    """py-spy beside this Python (a venv's), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise SystemExit("bench/fleet_profile.py needs py-spy: pip install py-spy")
    return found


def spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording ``pid`` (raw collapsed stacks) until it is interrupted."""
    return subprocess.Popen(
        [
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--rate",
            "1000",
            "--format",
            "raw",
            "--output",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stop_spy(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(2)  # SIGINT: py-spy writes its output and exits
    proc.wait(60)


def summary(raw: Path, top: int) -> list[str]:
    """The top functions by own samples and with callees, from py-spy's collapsed stacks."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        samples += count
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[-1].split(":")[0].split("/")[-1] + ")"
            for f in stack.split(";")
        ]
        own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    lines = [f"  {samples} samples"]
    lines.append("  own:")
    lines += [f"    {100 * n / samples:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines.append("  with callees:")
    lines += [f"    {100 * n / samples:5.1f}%  {name}" for name, n in total.most_common(top)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=10_000, help="timed submits (10,000)")
    parser.add_argument("--top", type=int, default=25, help="functions shown per list (25)")
    args = parser.parse_args()
    env = find_pi()
    with tempfile.TemporaryDirectory(prefix="pifleetprof") as tmp:
        base = Path(tmp)
        server = NatsServer(base / "jetstream")
        server.start()
        try:
            relays = make_private_dir(base / "relays")
            with running_pi(env, base / "pi", relay_dir=relays, shared_tmp=base / "pitmp") as pi:
                ids = [pi.open_form(single_question()) for _ in range(RT_FORMS)]
                job = {"forms": ids, "warm": 500, "count": args.count}
                with workers() as pool:
                    forwarder = start(
                        pool, "forwarders", {"url": server.url, "hosts": {PI_HOST: str(relays)}}
                    )
                    forwarder.read()
                    bridge = start(
                        pool, "rtt", {**job, "url": server.url, "host": PI_HOST, "pid": pi.pid}
                    )
                    bridge.read(300)  # warmed up
                    spies = {
                        "forwarder": (forwarder.pid, base / "forwarder.txt"),
                        "bridge": (bridge.pid, base / "bridge.txt"),
                    }
                    running = {name: spy(pid, out) for name, (pid, out) in spies.items()}
                    cpu = Cpu({name: pid for name, (pid, _) in spies.items()})
                    bridge.send({"command": "go"})
                    samples = bridge.read(600)["samples"]
                    per = cpu.per(len(samples))
                    for proc in running.values():
                        stop_spy(proc)
                for flow_id in ids:
                    pi.cancel_form(flow_id)
        finally:
            server.stop()
        samples.sort()
        print(
            f"{len(samples)} submits, p50 {1e3 * samples[len(samples) // 2]:.3f} ms "
            "(sampled: slower than bench/fleet.py)"
        )
        for name, (_, out) in spies.items():
            print(f"{name}: {per[name]:.0f} us of CPU per submit")
            print("\n".join(summary(out, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
