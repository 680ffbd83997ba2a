"""bench/relay.py keeps working against a real Pi: ``--quick`` prints each of its figure lines.

Only the shape of the figures is checked, never the targets (CI machines' load varies); the tox
``bench`` env runs the full benchmark and fails on a missed target.
"""

from __future__ import annotations

from tests.integration.pi_process import PiEnv
from tests.test_bench_exit_status import check_missed, run_with_target
from tests.test_bench_smoke import RELAY_FIGURES, check_quick_run


def test_relay_bench_quick_run_prints_its_figures(pi_installation: PiEnv) -> None:
    flavour = ["--legacy"] if pi_installation.flavour == "legacy" else []
    check_quick_run("relay.py", RELAY_FIGURES, *flavour)


def test_relay_bench_exits_1_on_a_missed_target(pi_installation: PiEnv) -> None:
    flavour = ["--legacy"] if pi_installation.flavour == "legacy" else []
    done = run_with_target("relay.py", "P50_RATIO_TARGET", 0.0, *flavour)
    check_missed(done, "TARGETS MISSED: SDK p50")
