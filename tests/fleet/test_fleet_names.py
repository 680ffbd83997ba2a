"""The fleet's names (pi_ask_sdk.fleet.protocol): subject tokens are safe for any flow id, host
ids are checked, per-Pi subjects parse back; neither the SDK nor the CLI loads nats-py until the
fleet is used."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_ask_sdk.errors import InvalidArgument
from pi_ask_sdk.fleet import FleetNames
from pi_ask_sdk.fleet.protocol import check_host_id, flow_token

TOKEN = re.compile(r"[A-Za-z0-9_-]+")


@given(st.text())
def test_any_flow_id_makes_one_safe_token(flow_id: str) -> None:
    token = flow_token(flow_id)
    assert TOKEN.fullmatch(token), token
    assert len(token) <= 130


def test_flow_tokens_differ_for_different_ids() -> None:
    ids = ["tool:a", "tool:b", "a.b", "a*b", "a>b", "x" * 200, "x" * 201, "\ud83d", "é"]
    assert len({flow_token(i) for i in ids}) == len(ids)


@pytest.mark.parametrize("bad", ["", "_x", "-x", "a.b", "a*", "a>", "a b", "é", "x" * 65])
def test_a_host_id_that_cannot_be_one_token_is_refused(bad: str) -> None:
    with pytest.raises(InvalidArgument, match="host id"):
        check_host_id(bad)


def test_per_pi_subjects_parse_back_and_stay_under_the_prefix() -> None:
    names = FleetNames("team.fleet")
    assert names.flows_stream == "TEAM_FLEET_FLOWS"
    assert names.parse(names.state("h-1", 42)) == ("h-1", 42, "state", "")
    assert names.parse(names.submit("h-1", 42)) == ("h-1", 42, "submit", "")
    assert names.parse(names.result("h-1", 42)) == ("h-1", 42, "result", "")
    assert names.parse(names.flow("h-1", 42, "tool:x"))[:3] == ("h-1", 42, "flow")  # type: ignore[index]
    assert names.parse("piask.h.1.state") is None  # another prefix
    assert names.parse(names.bridge("b")) is None  # not a Pi's subject
    with pytest.raises(InvalidArgument, match="prefix"):
        FleetNames("bad prefix")


def test_neither_the_sdk_nor_the_cli_load_nats() -> None:
    code = (
        "import sys, pi_ask_sdk, pi_ask_sdk.transports, pi_ask_sdk.errors\n"
        "assert 'nats' not in sys.modules, sorted(m for m in sys.modules if 'nats' in m)\n"
        "import pi_ask_sdk.cli\n"
        "assert 'nats' not in sys.modules\n"
        "import pi_ask_sdk.fleet\n"
        "assert 'nats' not in sys.modules\n"
        "pi_ask_sdk.fleet.Fleet\n"
        "assert 'nats' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
