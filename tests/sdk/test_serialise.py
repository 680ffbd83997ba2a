"""Everything a bridge holds turns into JSON in the wire's shape (``to_json`` / ``to_data``), and
forms and responses come back (``flow_from_json``, ``response_from_json``), checked."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from pi_ask_core import STARTED, InvalidForm
from pi_ask_sdk import (
    AnswerBuilder,
    Cancel,
    FlowCompleted,
    FlowMismatch,
    FlowStarted,
    FlowView,
    InvalidArgument,
    InvalidResponse,
    InvalidSelection,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitTimedOut,
    UnknownOption,
    flow_from_json,
    response_from_json,
    to_data,
    to_json,
)
from pi_ask_sdk.testing import AskParams, FakeHost, unchecked_answer, yes_no_params

from .conftest import MULTI_FORM, TIMEOUT
from .helpers import refused_by_label, view_of


@pytest.fixture
def flow() -> FlowView:
    return view_of(MULTI_FORM, tool_call_id="plan")


def test_a_flow_is_its_started_event_and_comes_back_equal(flow: FlowView) -> None:
    host = FakeHost()
    host.open(MULTI_FORM, tool_call_id="plan")
    started = host.recorded(STARTED)[-1]
    assert isinstance(started, dict)
    data = to_data(flow)
    assert data == {**started, "createdAt": flow.created_at}  # the wire's own shape
    assert json.loads(to_json(flow)) == data  # titles and labels are plain strings
    again = flow_from_json(to_json(flow))
    assert again == flow
    assert (
        again.question("deploy").option("yes").badge == flow.question("deploy").option("yes").badge
    )
    replayed = replace(flow, replay=True)
    assert to_data(replayed)["replay"] is True
    assert flow_from_json(to_data(replayed)) == replayed
    assert flow_from_json(to_json(flow).encode()) == flow


def test_views_of_questions_and_options_are_wire_shaped(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    assert to_data(deploy)["options"] == [
        {"value": "yes", "label": "Ship it", "recommended": True},
        {"value": "no", "label": "Hold", "description": "wait for QA"},
    ]
    assert to_data(deploy.option("no")) == {
        "value": "no",
        "label": "Hold",
        "description": "wait for QA",
    }


def test_responses_are_submit_shaped_and_come_back_checked(flow: FlowView) -> None:
    deploy, targets = flow.question("deploy"), flow.question("targets")
    answer = (
        AnswerBuilder(flow)
        .select(deploy, deploy.value("no"))
        .note(deploy, "after the freeze")
        .select(targets, targets.value("eu"), targets.value("us"))
        .custom_text(targets, "mars")
        .option_note(targets, targets.value("asia"), "later")
        .mode("elaborate")
        .build()
    )
    data = to_data(answer)
    assert data == {"flowId": "tool:plan", "response": answer.to_builtins()}
    assert response_from_json(flow, to_json(answer)) == answer
    empty = AnswerBuilder(flow).select(deploy).build()  # an entry with nothing in it
    assert to_data(empty)["response"] == {
        "kind": "answer",
        "mode": "submit",
        "answers": {"deploy": {}},
    }
    assert response_from_json(flow, to_json(empty)) == empty
    cancel = Cancel.of(flow)
    assert to_data(cancel) == {"flowId": "tool:plan", "response": {"kind": "cancel"}}
    assert response_from_json(flow, to_data(cancel)) == cancel
    unchecked = unchecked_answer(flow, {"deploy": ["Ship it"]})
    assert to_data(unchecked)["response"] == unchecked.to_builtins()


def test_a_response_read_back_is_checked_against_the_form(flow: FlowView) -> None:
    by_label = {
        "flowId": "tool:plan",
        "response": {"kind": "answer", "answers": {"deploy": {"values": ["Ship it"]}}},
    }
    with pytest.raises(UnknownOption):
        response_from_json(flow, json.dumps(by_label))
    other = view_of(MULTI_FORM, tool_call_id="other")
    with pytest.raises(FlowMismatch) as caught:
        response_from_json(flow, to_json(Cancel.of(other)))
    assert (caught.value.flow_id, caught.value.other_flow_id) == ("tool:plan", "tool:other")
    two = {
        "flowId": "tool:plan",
        "response": {"kind": "answer", "answers": {"deploy": {"values": ["yes", "no"]}}},
    }
    with pytest.raises(InvalidSelection) as refused:
        response_from_json(flow, json.dumps(two))
    assert refused.value.problem == "too_many_values"
    for malformed in ("{", "[]", '{"flowId": "tool:plan"}', '{"flowId": 1, "response": {}}'):
        with pytest.raises(InvalidArgument):
            response_from_json(flow, malformed)
    with pytest.raises(InvalidArgument):
        flow_from_json('{"flowId": "x"}')


@pytest.mark.asyncio
async def test_outcomes_and_events_serialise() -> None:
    host = FakeHost()
    async with host.client() as client:
        events = client.events()
        host.open(yes_no_params("deploy"), tool_call_id="a")
        flow = await client.flows().next(timeout=TIMEOUT)
        deploy = flow.question("deploy")
        accepted = await client.respond(
            flow, AnswerBuilder(flow).select(deploy, deploy.value("yes")).build(), timeout=TIMEOUT
        )
        assert isinstance(accepted, SubmitAccepted)
        data = json.loads(to_json(accepted))
        assert data["kind"] == "accepted"
        assert data["flowId"] == "tool:a"
        assert data["responseKind"] == "answer"
        assert data["requestId"] == accepted.ticket.request_id
        assert data["completion"]["result"]["answers"]["deploy"]["values"] == ["yes"]
        assert data["completion"]["flow"] == to_data(flow)

        started = await events.next(timeout=TIMEOUT)
        assert isinstance(started, FlowStarted)
        assert to_data(started) == {"kind": "started", "flow": to_data(flow)}
        completed = await events.next(timeout=TIMEOUT)
        assert isinstance(completed, FlowCompleted)
        assert to_data(completed) == data["completion"]

        rejected = await refused_by_label(host, client, "b")
        ticket = rejected.ticket
        assert to_data(rejected) == {
            "kind": "rejected",
            "requestId": ticket.request_id,
            "flowId": "tool:b",
            "responseKind": "answer",
            "error": "invalid_answer",
            "message": rejected.message.render(),
        }
        assert to_data(SubmitTimedOut(ticket, 1.5, acknowledged=True)) == {
            "kind": "timed_out",
            "requestId": ticket.request_id,
            "flowId": "tool:b",
            "responseKind": "answer",
            "timeout": 1.5,
            "acknowledged": True,
        }
        assert to_data(SubmitLost(ticket, "disconnected"))["reason"] == "disconnected"
    assert to_data(SubmitNotSent(flow.flow_id, "flow_completed")) == {
        "kind": "not_sent",
        "flowId": "tool:a",
        "reason": "flow_completed",
    }
    assert to_data(SessionEnded("session_ended")) == {
        "kind": "session_ended",
        "reason": "session_ended",
    }


def test_anything_else_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        to_data(object())  # type: ignore[arg-type]


texts = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    title=texts,
    values=st.lists(texts, min_size=1, max_size=4, unique=True),
    label=texts,
    multi=st.booleans(),
    picks=st.lists(st.integers(min_value=0, max_value=3), max_size=3, unique=True),
    custom=st.one_of(st.none(), texts),
)
def test_any_form_and_answer_round_trip(
    title: str,
    values: list[str],
    label: str,
    multi: bool,
    picks: list[int],
    custom: str | None,
) -> None:
    params: AskParams = {
        "title": title,
        "questions": [
            {
                "id": "q",
                "prompt": title,
                "type": "multi" if multi else "single",
                "options": [{"value": value, "label": label} for value in values],
            }
        ],
    }
    try:
        flow = view_of(params)
    except InvalidForm:
        return  # (blank text the host refuses is no form)
    assert flow_from_json(to_json(flow)) == flow
    question = flow.question("q")
    chosen = [question.values[i] for i in picks if i < len(question.values)]
    builder = AnswerBuilder(flow)
    try:
        builder.select(question, *chosen)
        if custom is not None:
            builder.custom_text(question, custom)
    except InvalidResponse:
        return  # (what the host would refuse is refused before any JSON)
    answer = builder.build()
    assert response_from_json(flow, to_json(answer)) == answer
