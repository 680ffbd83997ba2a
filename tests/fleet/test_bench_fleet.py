"""``bench/fleet.py`` keeps working against a real nats-server: a ``--quick`` run prints each
of its figure lines, exits 1 naming a missed target, and ``--smoke`` exits 0 on the same miss
(what the tox ``bench-smoke`` env relies on). A target is made unreachable so that the exit
status does not depend on this machine's speed; the figures' values are never checked."""

from __future__ import annotations

import re

import pytest

from tests.test_bench_exit_status import run_with_target
from tests.test_bench_smoke import _NUMBER, _VERDICT

FIGURES = [
    rf"^round trip, {_NUMBER} submits per side, GC on \(ms\):$",
    rf"^  fleet \(respond via BridgeClient/NatsTransport\) +p50 {_NUMBER} +p99 {_NUMBER} +cpu/rt"
    rf" {_NUMBER} us$",
    rf"^  floor: NATS request/reply +p50 {_NUMBER} +p99 {_NUMBER}$",
    rf"^  floor: relay round trip \(bare asyncio\) +p50 {_NUMBER} +p99 {_NUMBER}$",
    rf"^  fleet/floor p50 ratio {_NUMBER} \(floor p50 {_NUMBER} ms; target <= {_NUMBER}\)"
    rf" {_VERDICT}$",
    rf"^50 hosts, one bridge: {_NUMBER} forms offered at {_NUMBER}/s, {_NUMBER} answered at"
    rf" {_NUMBER}/s \(target >= {_NUMBER}/s sustained\) {_VERDICT}$",
    rf"^  open -> answered p50 {_NUMBER} ms  p99 {_NUMBER} ms  max {_NUMBER} ms \(target p99 <="
    rf" {_NUMBER} ms\) {_VERDICT}$",
    rf"^  context: most forms/s with 100 open at once \(closed loop\): {_NUMBER}/s over"
    rf" {_NUMBER} forms$",
    rf"^forwarder memory over {_NUMBER} forms \(after {_NUMBER}\): RSS {_NUMBER} -> {_NUMBER} KiB"
    rf" \({_NUMBER}; target <= \+{_NUMBER}\) {_VERDICT}$",
    rf"^  traced \(tracemalloc from the start, another run\) {_NUMBER} -> {_NUMBER} KiB ="
    rf" {_NUMBER} B/form \(target <= {_NUMBER}\) {_VERDICT}; gc objects {_NUMBER} ->"
    rf" {_NUMBER} \({_NUMBER}\)$",
    r"^TARGETS MISSED: round trip p50 .+x the floor > 0\.0x",
]


@pytest.mark.parametrize(("mode", "status"), [("--quick", 1), ("--smoke", 0)])
def test_a_quick_fleet_bench_prints_its_figures_and_its_exit_status(mode: str, status: int) -> None:
    extra = [] if mode == "--quick" else ["--smoke"]
    done = run_with_target("fleet.py", "RTT_RATIO_TARGET", 0.0, *extra)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    for pattern in FIGURES:
        assert any(re.search(pattern, line) for line in lines), (
            f"bench/fleet.py {mode} printed no line matching {pattern!r}:\n{done.stdout}"
        )
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr[-2000:])
    if mode == "--smoke":
        assert lines[-1] == "(--smoke: targets are not enforced)", done.stdout
    else:
        assert lines[-1].startswith("TARGETS MISSED: round trip"), done.stdout
