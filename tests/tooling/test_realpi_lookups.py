"""The real-Pi kit's typed lookups (issue 27): ``PiProcess.result`` takes the ``FlowId`` it
handed out, and refuses at once a flow it never opened. The mypy side is in
tests/typing/fail/fail_real_pi_kit.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pi_ask_sdk import FlowId
from pi_ask_sdk.testing.errors import ToolingError, UnknownFlow
from pi_ask_sdk.testing.realpi import PiEnv, PiProcess


def test_result_of_a_flow_this_pi_never_opened_is_refused_at_once(tmp_path: Path) -> None:
    """Before, ``pi.result("deploy-1")`` (a tool call id, not its flow ``tool:deploy-1``)
    waited out its whole timeout and failed as ``PiFailed``."""
    env = PiEnv("current", "/nonexistent/node", "/nonexistent/cli.js", "1.6.0", "/nonexistent")
    pi = PiProcess(env, tmp_path)  # not started: the lookup needs no Pi
    started = time.monotonic()
    with pytest.raises(UnknownFlow) as caught:
        pi.result(FlowId("deploy-1"), timeout=30)
    assert time.monotonic() - started < 1
    assert isinstance(caught.value, ToolingError)
    assert isinstance(caught.value, LookupError)
    assert caught.value.code == "flow_not_opened"
    assert caught.value.flow_id == "deploy-1"
    assert str(caught.value) == (
        "No flow 'deploy-1' was opened by this Pi process (opened here: none yet); pass the "
        "flow id open_form or call_ask_user returned (tool call 'x' opens flow 'tool:x')"
    )
