"""``bench/fleet.py`` keeps working against a real nats-server and a real Pi: a ``--quick`` run
prints each of its figure lines, exits 1 naming a missed target, and ``--smoke`` exits 0 on the
same miss (what the tox ``bench-smoke`` env relies on). A target is made unreachable so that
the exit status does not depend on this machine's speed; the figures' values are never checked.

The bench finds Pi 1.6.0 where ``$PI_ASK_PI_CACHE`` says (the fleet env points it at
tests/integration, where scripts/install-pi.sh puts it); without it this test skips (fails with
``CI=true``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pi_ask_sdk.testing.realpi import PiNotInstalled, locate_pi
from tests.integration.pi_process import PI_DIR, unavailable
from tests.test_bench_exit_status import run_with_target
from tests.test_bench_smoke import _NUMBER, _VERDICT

pytestmark = pytest.mark.pi

FIGURES = [
    rf"^round trip with a real Pi \(1\.6\.0, current\), {_NUMBER} submits per side, GC on"
    r" \(ms\):$",
    rf"^  fleet \(BridgeClient/NatsTransport -> NATS -> forwarder -> relay -> Pi\) +p50 {_NUMBER}"
    rf"  p99 {_NUMBER}$",
    rf"^  floor: the two parts in turn, timed in one loop +p50 {_NUMBER}  p99 {_NUMBER}$",
    rf"^    part alone: raw NATS request/reply \({_NUMBER} B body\) +p50 {_NUMBER}  p99"
    rf" {_NUMBER}$",
    rf"^    part alone: SDK over the relay \(BridgeClient/RelayTransport\) +p50 {_NUMBER}"
    rf"  p99 {_NUMBER}$",
    rf"^    \(the parts alone, their samples paired: p50 {_NUMBER}  p99 {_NUMBER}; their"
    rf" percentiles summed: p50 {_NUMBER}  p99 {_NUMBER}\)$",
    rf"^  fleet/floor p50 ratio {_NUMBER} \(target <= {_NUMBER}\) {_VERDICT}; p99 ratio"
    rf" {_NUMBER} \(target <= {_NUMBER}\) {_VERDICT}$",
    rf"^  cpu per submit \(us\): fleet: bridge {_NUMBER}, forwarder {_NUMBER}, nats-server"
    rf" {_NUMBER}, Pi {_NUMBER}, stand-in {_NUMBER}$",
    rf"^ +floor: bridge {_NUMBER}, responder {_NUMBER}, nats-server {_NUMBER}, Pi {_NUMBER},"
    rf" stand-in {_NUMBER}$",
    rf"^ +relay alone: bridge {_NUMBER}, Pi {_NUMBER}, stand-in {_NUMBER}$",
    rf"^ +NATS alone: requester {_NUMBER}, responder {_NUMBER}, nats-server {_NUMBER}$",
    rf"^  where the fleet's p50 goes: the floor {_NUMBER} \+ the fleet's own work {_NUMBER} ms"
    rf" \(the parts alone: relay {_NUMBER}, NATS {_NUMBER}\)$",
    rf"^  per hop, p50 of each \(another round, a tap on NATS and on the relay, {_NUMBER}"
    r" submits; ms\):$",
    rf"^    bridge -> NATS -> the submit on NATS +{_NUMBER}$",
    rf"^    -> forwarder -> relay -> Pi -> the relay's submit-result +{_NUMBER}$",
    rf"^    -> forwarder -> the reply on NATS +{_NUMBER}$",
    rf"^    -> NATS -> the bridge has the outcome +{_NUMBER}$",
    rf"^one bridge, closed loop: {_NUMBER} forms, {_NUMBER} open at once over {_NUMBER} FakeRelay"
    rf" hosts: {_NUMBER} forms/s \(target >= {_NUMBER}/s\) {_VERDICT}$",
    rf"^  cpu per form \(us\): bridge {_NUMBER}, forwarders {_NUMBER}, hosts {_NUMBER},"
    rf" nats-server {_NUMBER}$",
    rf"^  first half {_NUMBER} forms/s, second half {_NUMBER} forms/s$",
    rf"^50 hosts, one bridge: {_NUMBER} forms offered at {_NUMBER}/s, {_NUMBER} answered at"
    rf" {_NUMBER}/s \(target >= {_NUMBER}/s sustained\) {_VERDICT}$",
    rf"^  open -> answered p50 {_NUMBER} ms  p99 {_NUMBER} ms  max {_NUMBER} ms \(target p99 <="
    rf" {_NUMBER} ms\) {_VERDICT}$",
    rf"^group of 3 replicas: {_NUMBER} forms/s, one replica {_NUMBER} forms/s: {_NUMBER}x"
    rf" \(target >= {_NUMBER}x; .*\) {_VERDICT}$",
    rf"^forwarder memory over {_NUMBER} forms \(after {_NUMBER}\): RSS {_NUMBER} -> {_NUMBER} KiB"
    rf" \({_NUMBER}; target <= \+{_NUMBER}\) {_VERDICT}$",
    rf"^  traced \(tracemalloc from the start, another run\) {_NUMBER} -> {_NUMBER} KiB ="
    rf" {_NUMBER} B/form \(target <= {_NUMBER}\) {_VERDICT}; gc objects {_NUMBER} ->"
    rf" {_NUMBER} \({_NUMBER}\)$",
    r"^TARGETS MISSED: round trip p50 .+x the floor > 0\.0x",
]


@pytest.fixture(scope="module", autouse=True)
def pi_installed() -> None:
    cache = os.environ.get("PI_ASK_PI_CACHE")
    try:
        locate_pi("current", Path(cache) if cache else PI_DIR)
    except PiNotInstalled as exc:
        unavailable(f"bench/fleet.py needs Pi 1.6.0: {exc}")


@pytest.mark.parametrize(("mode", "status"), [("--quick", 1), ("--smoke", 0)])
def test_a_quick_fleet_bench_prints_its_figures_and_its_exit_status(mode: str, status: int) -> None:
    extra = [] if mode == "--quick" else ["--smoke"]
    done = run_with_target("fleet.py", "RTT_P50_TARGET", 0.0, *extra)
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
        assert lines[-1].startswith("TARGETS MISSED: round trip p50"), done.stdout
