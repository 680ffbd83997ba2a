"""Typed lookups (issue 27): ``PiProcess.result`` takes the ``FlowId`` it handed out,
``FlowView.question`` a ``QuestionId`` of its form (or the id's text), and
``SubmitRejected.message`` is display text (to render, never to parse). The mypy side is in
tests/typing/fail/fail_real_pi_kit.py and fail_outcomes.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pi_ask_sdk import (
    DisplayText,
    FlowId,
    FlowMismatch,
    SubmitRejected,
    UnknownQuestion,
)
from pi_ask_sdk.serialise import to_data
from pi_ask_sdk.testing import FakeHost, unchecked_answer, yes_no_params
from pi_ask_sdk.testing.errors import ToolingError, UnknownFlow
from pi_ask_sdk.testing.realpi import PiEnv, PiProcess

from .conftest import TIMEOUT


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


@pytest.mark.asyncio
async def test_question_takes_its_forms_question_id_or_the_ids_text() -> None:
    fake = FakeHost()
    async with fake.client() as client:
        fake.open(yes_no_params(), tool_call_id="a")
        fake.open(yes_no_params(), tool_call_id="b")
        a, b = client.open_flows.values()
        deploy = a.question("deploy")  # a literal: checked at run time
        assert a.question(deploy.id) is deploy  # the typed way: an id taken from the form
        with pytest.raises(FlowMismatch):
            a.question(b.question("deploy").id)  # an id of another form
        with pytest.raises(UnknownQuestion, match="Deploy"):
            a.question("Deploy")  # not an id (ids match exactly)
        with pytest.raises(UnknownQuestion):
            a.question(deploy.label)  # type: ignore[arg-type]  # a label is no id


@pytest.mark.asyncio
async def test_a_rejections_message_is_display_text() -> None:
    fake = FakeHost()
    async with fake.client() as client:
        fake.open(yes_no_params(), tool_call_id="c")
        [flow] = client.open_flows.values()
        refused = await client.respond(
            flow, unchecked_answer(flow, {"deploy": ["Yes"]}), timeout=TIMEOUT
        )
    assert isinstance(refused, SubmitRejected)
    assert refused.error == "invalid_answer"  # the contract: branch on the code
    message = refused.message
    assert isinstance(message, DisplayText)
    assert not isinstance(message, str)  # (it was a str: easy to parse, or to send on)
    assert '"Yes"' in message.render()
    assert f"{message}" == str(message) == message.render()
    assert to_data(refused)["message"] == message.render()  # JSON keeps the text
