"""Typed lookups (issue 27): ``FlowView.question`` takes a ``QuestionId`` of its form (or the
id's text), and ``SubmitRejected.message`` is display text (to render, never to parse). The
mypy side is in tests/typing/fail/fail_outcomes.py; the real-Pi kit's ``PiProcess.result`` is
in tests/tooling/test_realpi_lookups.py."""

from __future__ import annotations

import pytest

from pi_ask_sdk import (
    DisplayText,
    FlowMismatch,
    SubmitRejected,
    UnknownQuestion,
)
from pi_ask_sdk.serialise import to_data
from pi_ask_sdk.testing import FakeHost, unchecked_answer, yes_no_params

from .conftest import TIMEOUT


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
