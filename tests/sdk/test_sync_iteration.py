"""SyncBridgeClient.connect() and ``for flow in client.flows():`` with bounded waits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pi_ask_sdk
from pi_ask_sdk import (
    AnswerBuilder,
    SubmitAccepted,
    SyncBridgeClient,
    TransportUnavailable,
    WaitTimeout,
)
from pi_ask_sdk.testing import FakeHost, yes_no_params
from pi_ask_sdk.transports.relay import NoRelayFound

from .conftest import TIMEOUT


def test_for_loop_over_flows_answers_each_and_ends_with_the_connection() -> None:
    fake = FakeHost()
    fake.open(yes_no_params(), tool_call_id="a")
    fake.open(yes_no_params(), tool_call_id="b")
    seen: list[str] = []
    with SyncBridgeClient.connect(fake.transport, timeout=TIMEOUT) as client:
        for flow in client.flows(idle_timeout=TIMEOUT):
            deploy = flow.question("deploy")
            answer = AnswerBuilder(flow).select(deploy, deploy.value("no")).build()
            assert isinstance(client.respond(flow, answer, timeout=TIMEOUT), SubmitAccepted)
            seen.append(flow.flow_id)
            if len(seen) == 2:
                fake.disconnect()  # the stream ends: the for loop stops by itself
    assert seen == ["tool:a", "tool:b"]


def test_an_idle_stream_raises_wait_timeout_after_idle_timeout() -> None:
    fake = FakeHost()
    with SyncBridgeClient.connect(fake.transport, timeout=TIMEOUT) as client:
        flows = client.flows(idle_timeout=0.05)
        with pytest.raises(WaitTimeout):
            next(iter(flows))
        fake.open(yes_no_params(), tool_call_id="late")
        assert next(flows).flow_id == "tool:late"  # nothing was lost by the timeout


def test_connect_without_a_running_pi_raises_the_relay_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(tmp_path / "none"))
    with pytest.raises(NoRelayFound) as caught:
        SyncBridgeClient.connect()
    assert isinstance(caught.value, TransportUnavailable)
    assert caught.value.directory == tmp_path / "none"


def test_relay_errors_live_in_the_relay_package_and_the_root_loads_none() -> None:
    from pi_ask_sdk.transports import relay

    for name in ("AmbiguousRelay", "NoRelayFound", "RelayError", "RelayHandshakeError"):
        assert name not in pi_ask_sdk.__all__
        kind = getattr(relay, name)
        assert kind.__module__ == "pi_ask_sdk.transports.relay.errors"
        assert issubclass(kind, TransportUnavailable)  # what the root offers to catch
    code = (
        "import sys, pi_ask_sdk\n"
        "assert 'pi_ask_sdk.transports.relay' not in sys.modules\n"
        "from pi_ask_sdk import TransportUnavailable\n"
        "assert 'pi_ask_sdk.transports.relay' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError):
        _ = pi_ask_sdk.NoSuchName  # type: ignore[attr-defined]
