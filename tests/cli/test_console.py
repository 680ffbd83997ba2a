"""pi-ask answer's console: end of input, forms that complete while asked, JSON records."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.cli.console import answer_forms
from pi_ask_sdk.cli.prompts import UNANSWERED
from pi_ask_sdk.testing import FakeHost, yes_no_params

T = 10.0


@pytest.mark.asyncio
async def test_end_of_input_stops_without_sending_anything() -> None:
    fake = FakeHost()
    shown: list[str] = []

    def prompt(_: str) -> str:
        raise EOFError

    async with BridgeClient(fake.transport()) as client:
        handle = fake.open(yes_no_params(), tool_call_id="eof")
        accepted = await asyncio.wait_for(answer_forms(client, prompt, shown.append), T)
        assert handle.result is None  # still open in the host: EOF is no cancel
        assert list(client.open_flows) == ["tool:eof"]
    assert accepted == 0
    assert fake.submits == []
    assert f"end of input: stopped; {UNANSWERED}" in shown
    assert "stay open in Pi;" not in UNANSWERED  # (issue 27: not so for a headless Pi)


@pytest.mark.asyncio
async def test_a_form_completed_while_asked_is_not_asked_further() -> None:
    fake = FakeHost()
    loop = asyncio.get_running_loop()
    told = threading.Event()
    prompts: list[str] = []
    shown: list[str] = []

    def write(text: str) -> None:
        shown.append(text)
        if "completed meanwhile" in text:
            told.set()

    def prompt(text: str) -> str:
        prompts.append(text)
        # The user answers the form in Pi while this person is still typing.
        loop.call_soon_threadsafe(fake.cancel, handle)
        assert told.wait(T), "the console did not notice the completion"
        return "1"  # typed after the form was gone: must not be used

    async with BridgeClient(fake.transport()) as client:
        handle = fake.open(yes_no_params(), tool_call_id="elsewhere")
        accepted = await asyncio.wait_for(answer_forms(client, prompt, write, limit=1), T)
    assert accepted == 0
    assert len(prompts) == 1  # no note prompt, no submit prompt
    assert fake.submits == []
    assert any("tool:elsewhere was completed meanwhile (source tool)" in line for line in shown)


@pytest.mark.asyncio
async def test_a_form_completed_before_its_turn_is_skipped_and_records_are_json_ready() -> None:
    fake = FakeHost()
    loop = asyncio.get_running_loop()
    typed = iter(["2", "", "s", "1", "", "s"])
    prompts: list[str] = []
    shown: list[str] = []
    records: list[dict[str, object]] = []

    def prompt(_: str) -> str:
        if not prompts:
            # Queued before this prompt's answer reaches the loop: handled first.
            loop.call_soon_threadsafe(fake.cancel, second)
        prompts.append(_)
        return next(typed)

    async with BridgeClient(fake.transport()) as client:
        first = fake.open(yes_no_params(), tool_call_id="first")
        second = fake.open(yes_no_params(), tool_call_id="second")
        third = fake.open(yes_no_params(), tool_call_id="third")
        accepted = await asyncio.wait_for(
            answer_forms(client, prompt, shown.append, limit=2, record=records.append), T
        )
        assert client.open_flows == {}
    assert accepted == 2  # the skipped form does not count towards --count
    assert first.result is not None
    assert first.result.answers["deploy"].values == ["no"]
    assert third.result is not None
    assert third.result.answers["deploy"].values == ["yes"]
    assert "! tool:second completed before it was asked; skipped" in shown
    assert [(r["flowId"], r["outcome"]) for r in records] == [
        ("tool:first", "accepted"),
        ("tool:third", "accepted"),
    ]
    [sent, _] = fake.submits
    assert isinstance(sent, dict)
    assert json.loads(json.dumps(records[0]["response"])) == sent["response"]


@pytest.mark.asyncio
async def test_a_session_ending_while_asked_stops_the_questions() -> None:
    fake = FakeHost()
    loop = asyncio.get_running_loop()
    told = threading.Event()
    shown: list[str] = []

    def write(text: str) -> None:
        shown.append(text)
        if "session ended" in text:
            told.set()

    def prompt(_: str) -> str:
        loop.call_soon_threadsafe(fake.new_session)  # /new in Pi: the form is gone
        assert told.wait(T), "the console did not notice the session end"
        return "1"

    async with BridgeClient(fake.transport()) as client:
        fake.open(yes_no_params(), tool_call_id="dropped")
        accepted = await asyncio.wait_for(answer_forms(client, prompt, write, limit=1), T)
    assert accepted == 0
    assert fake.submits == []
    assert any("tool:dropped is gone: the Pi session ended" in line for line in shown)
