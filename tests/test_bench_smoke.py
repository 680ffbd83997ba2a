"""The benchmarks keep working: ``--quick`` runs print each of their figure lines.

Only the shape of the figures is checked, never the targets (timings vary by machine, and CI
load varies): a run may exit 0 or 1, as long as 1 comes with the "TARGETS MISSED" summary and
nothing crashed. The tox ``bench`` env runs the full benchmarks and fails on a missed target.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_NUMBER = r"[+-]?[\d,]+(?:\.\d+)?"
_VERDICT = r"(met|MISSED)"

FIGURES = {
    "core.py": [
        rf"^context: 3-question form, valid submits: +{_NUMBER} us/submit \({_NUMBER}/s\)$",
        rf"^  floor msgspec\.json\.decode: +{_NUMBER} us +ratio +{_NUMBER}x",
        rf"^spec examples, open \+ valid submit: +{_NUMBER} us +peer +{_NUMBER} us +ratio"
        rf" {_NUMBER}x .*{_VERDICT}$",
        rf"^spec examples, invalid submit: +{_NUMBER} us +peer +{_NUMBER} us +ratio"
        rf" {_NUMBER}x .*{_VERDICT}$",
        rf"^  context: peer with msgspec decode +{_NUMBER} us \({_NUMBER}x the peer; the core is"
        rf" {_NUMBER}x it\)$",
        rf"^import msgspec +{_NUMBER} ms, import pi_ask_core +{_NUMBER} ms: ratio {_NUMBER}x"
        rf" .*{_VERDICT}$",
        r"^(targets met|TARGETS MISSED: .+)$",
    ],
    "sdk.py": [
        rf"^round trip with the SDK: +{_NUMBER} us +\({_NUMBER}/s; host\.start, flows\(\)",
        rf"^  floor by hand on the same bus: +{_NUMBER} us +ratio +{_NUMBER}x"
        rf" \(target <= 1\.5x\) {_VERDICT}$",
        rf"^  parts: host\.start {_NUMBER} us, started -> FlowView {_NUMBER} us, flows\(\)"
        rf" {_NUMBER} us, AnswerBuilder {_NUMBER} us, respond\(\) {_NUMBER} us",
        rf"^import pi_ask_sdk: +{_NUMBER} ms +floor import msgspec, asyncio +{_NUMBER} ms"
        rf" +ratio {_NUMBER} \(target <= 1\.3\) {_VERDICT}",
        r"^  largest self import times \(ms\): +pi_ask_",
        rf"^retained after {_NUMBER} flows: +{_NUMBER} gc objects, {_NUMBER} B traced, RSS"
        rf" {_NUMBER} KiB .*{_VERDICT}$",
        r"^(targets met|TARGETS MISSED: .+)$",
    ],
}


RELAY_FIGURES = [
    r"^Pi \S+ \((current|legacy)\), node ",
    rf"^round trip, {_NUMBER} submits each, GC on \(ms\):$",
    rf"^  SDK +\(respond via BridgeClient/RelayTransport\) +p50 {_NUMBER} +p99 {_NUMBER}$",
    rf"^  floor \(bare asyncio, own process, same bytes\) +p50 {_NUMBER} +p99 {_NUMBER}$",
    rf"^  gc during the timed round trips: SDK +gc \d+/\d+/\d+ +pause {_NUMBER} max {_NUMBER}"
    rf" +slowest 1%: \d+/\d+ with gc +gen0 {_NUMBER}/rt +cpu/rt {_NUMBER} us$",
    rf"^ +floor gc \d+/\d+/\d+ +pause {_NUMBER} max {_NUMBER} +slowest 1%: \d+/\d+ with gc"
    rf" +gen0 {_NUMBER}/rt +cpu/rt {_NUMBER} us$",
    rf"^  SDK/floor p50 ratio {_NUMBER} \(target <= 1\.3\) {_VERDICT}; p99 ratio {_NUMBER}"
    rf" \(target <= 1\.5\) {_VERDICT}$",
    rf"^replay of {_NUMBER} open forms to a connecting bridge: median of {_NUMBER} {_NUMBER} ms,"
    rf" max {_NUMBER} ms \(target <= 50 ms for 256\) {_VERDICT}$",
    rf"^pi-ask try to the first live form \(warm cache\): median of {_NUMBER} {_NUMBER} s,"
    rf" max {_NUMBER} s \(target <= 5 s\) {_VERDICT}$",
    rf"^context: Pi cold start to the first RPC response, median of {_NUMBER}: with the relay"
    rf" {_NUMBER} ms, without {_NUMBER} ms",
    r"^(targets met|TARGETS MISSED: .+)$",
]
"""bench/relay.py needs a real Pi: tests/integration/test_bench_relay_smoke.py runs it."""


def check_quick_run(script: str, patterns: list[str], *args: str) -> None:
    """Run ``bench/<script> --quick [args]``; fail on a crash or a missing figure line."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--quick", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    # 0: targets met, 1: a target missed (an uncaught exception also exits 1: see stderr).
    crashed = done.returncode not in (0, 1) or "Traceback" in done.stderr
    assert not crashed, f"{script} crashed:\n{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    for pattern in patterns:
        assert any(re.search(pattern, line) for line in lines), (
            f"{script} --quick printed no line matching {pattern!r}:\n{done.stdout}"
        )
    # Exit 1 exactly when the summary says a target was missed.
    assert (done.returncode == 1) == ("TARGETS MISSED" in done.stdout), done.stdout


@pytest.mark.parametrize("script", sorted(FIGURES))
def test_quick_run_prints_its_figures(script: str) -> None:
    check_quick_run(script, FIGURES[script])
