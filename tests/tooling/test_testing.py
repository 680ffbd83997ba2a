"""FakeHost (both orders, local answers, session end, records) and the pytest plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

import pi_ask_core
import pi_ask_core.protocol
from pi_ask_core import COMPLETED, STARTED, SUBMIT, SUBMIT_RESULT
from pi_ask_sdk import AnswerBuilder
from pi_ask_sdk.testing import (
    AskParams,
    AskParamsOption,
    AskParamsQuestion,
    FakeHost,
    yes_no_params,
)

from .conftest import TIMEOUT


def submit_raw(fake: FakeHost, request_id: str, flow_id: str) -> None:
    fake.emit_raw(
        SUBMIT,
        {"version": 1, "requestId": request_id, "flowId": flow_id, "response": {"kind": "cancel"}},
    )


def test_reference_order_is_completed_first() -> None:
    fake = FakeHost()
    fake.open(yes_no_params(), tool_call_id="c1")
    submit_raw(fake, "r1", "tool:c1")
    assert [e.channel for e in fake.events] == [STARTED, SUBMIT, COMPLETED, SUBMIT_RESULT]


def test_ack_first_order() -> None:
    fake = FakeHost(order="ack_first")
    fake.open(yes_no_params(), tool_call_id="c1")
    submit_raw(fake, "r1", "tool:c1")
    assert [e.channel for e in fake.events] == [STARTED, SUBMIT, SUBMIT_RESULT, COMPLETED]
    assert fake.acks == [{"version": 1, "requestId": "r1", "flowId": "tool:c1", "ok": True}]


def test_records_are_plain_json(fake: FakeHost) -> None:
    fake.open(yes_no_params(), tool_call_id="c1")
    started = fake.recorded(STARTED)[0]
    assert isinstance(started, dict)
    assert started["flowId"] == "tool:c1"
    assert "tool:c1" in repr(fake.events[0])
    fake.clear_records()
    assert fake.events == ()


def test_local_user_answers_and_cancels(fake: FakeHost) -> None:
    handle = fake.open(yes_no_params(), tool_call_id="c1")
    result = handle.complete({"kind": "answer", "answers": {"deploy": {"values": ["yes"]}}})
    assert result.answers["deploy"].labels == ["Yes"]
    fake.open(yes_no_params(), tool_call_id="c2")
    assert fake.cancel("tool:c2").cancelled
    assert len(fake.completions) == 2


def test_end_session_vanishes_flows_and_stops_acks(fake: FakeHost) -> None:
    fake.open(yes_no_params(), tool_call_id="c1")
    fake.end_session()
    submit_raw(fake, "late", "tool:c1")
    assert fake.completions == []
    assert fake.acks == []
    fake.new_session()
    fake.open(yes_no_params(), tool_call_id="c2")
    submit_raw(fake, "r2", "tool:c2")
    assert len(fake.acks) == 1


def test_max_records_bounds_the_record() -> None:
    fake = FakeHost(max_records=3)
    for n in range(5):
        fake.open(yes_no_params(), tool_call_id=f"c{n}")
    flow_ids = [e.data["flowId"] for e in fake.events if isinstance(e.data, dict)]
    assert flow_ids == ["tool:c2", "tool:c3", "tool:c4"]
    assert len(fake.events) == 3


@pytest.mark.asyncio
async def test_fake_host_accepts_an_sdk_answer_locally(fake: FakeHost) -> None:
    async with fake.client() as client:
        events = client.events()
        handle = fake.open(yes_no_params(), tool_call_id="c1")
        flow = client.open_flows["tool:c1"]  # type: ignore[index]
        deploy = flow.question("deploy")
        fake.answer(handle, AnswerBuilder(flow).select(deploy, deploy.value("no")).build())
        await events.next(timeout=TIMEOUT)
        completed = await events.next(timeout=TIMEOUT)
        assert completed.kind == "completed"


PLUGIN_TEST = textwrap.dedent(
    """
    import asyncio

    import pytest

    from pi_ask_sdk import AnswerBuilder, SubmitAccepted
    from pi_ask_sdk.testing import yes_no_params


    def test_sync_fixture(pi_ask_host, pi_ask_sync_client):
        pi_ask_host.open(yes_no_params(), tool_call_id="c1")
        flow = pi_ask_sync_client.flows().next(timeout=2)
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
        assert isinstance(pi_ask_sync_client.respond(flow, answer, timeout=2), SubmitAccepted)


    @pytest.mark.parametrize("pi_ask_order", ["completed_first", "ack_first"])
    def test_async_client_without_an_async_plugin(pi_ask_host, pi_ask_client, pi_ask_order):
        assert pi_ask_host.order == pi_ask_order

        async def scenario():
            async with pi_ask_client as client:
                pi_ask_host.open(yes_no_params(), tool_call_id="c1")
                flow = await client.flows().next(timeout=2)
                deploy = flow.question("deploy")
                answer = AnswerBuilder(flow).select(deploy, deploy.value("yes")).build()
                outcome = await client.respond(flow, answer, timeout=2)
                assert isinstance(outcome, SubmitAccepted)
                assert outcome.completion.result.answers["deploy"].values == ["yes"]

        asyncio.run(scenario())
    """
)


def test_plugin_fixtures_work_without_any_async_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_bridge.py").write_text(PLUGIN_TEST)
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # no pytest-asyncio, no entry points
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "pi_ask_sdk.testing.pytest_plugin",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_answer_takes_only_sdk_responses(fake: FakeHost) -> None:
    handle = fake.open(yes_no_params(), tool_call_id="c1")
    raw = {"kind": "answer", "answers": {"deploy": {"values": ["yes"]}}}
    with pytest.raises(TypeError, match="Answer or a Cancel"):
        fake.answer(handle, raw)  # type: ignore[arg-type]
    assert handle.is_open


@pytest.mark.parametrize(
    ("typed", "struct"),
    [
        (AskParams, pi_ask_core.AskParams),
        (AskParamsQuestion, pi_ask_core.protocol.AskParamsQuestion),
        (AskParamsOption, pi_ask_core.protocol.AskParamsOption),
    ],
)
def test_ask_params_typeddicts_match_the_wire_structs(typed: type, struct: type) -> None:
    """FakeHost.open's TypedDicts have the keys (and required keys) of the core's Structs."""
    from pi_ask_core.schema import _fields

    fields = {key: required for key, _, required in _fields(struct)}
    assert set(typing.get_type_hints(typed)) == set(fields)
    assert typed.__required_keys__ == {key for key, required in fields.items() if required}  # type: ignore[attr-defined]


def test_answer_refuses_a_response_built_for_another_flow(fake: FakeHost) -> None:
    from pi_ask_sdk import Cancel, FlowMismatch
    from tests.sdk.helpers import view_of

    handle = fake.open(yes_no_params(), tool_call_id="c1")
    other = view_of(yes_no_params(), tool_call_id="c2")
    with pytest.raises(FlowMismatch):
        fake.answer(handle, Cancel.of(other))
    assert handle.is_open
