"""Typed views of a started form: lookups by exact id/value, never by label."""

from __future__ import annotations

import pytest

from pi_ask_sdk import FlowView, OptionValue, UnknownOption, UnknownQuestion

from .conftest import MULTI_FORM
from .helpers import view_of


@pytest.fixture
def flow() -> FlowView:
    return view_of(MULTI_FORM, tool_call_id="plan")


def test_view_carries_the_started_event(flow: FlowView) -> None:
    assert flow.flow_id == "tool:plan"
    assert flow.tool_call_id == "plan"
    assert flow.source == "tool"
    assert flow.title == "Plan"
    assert flow.replay is False
    assert flow.question_ids == ("deploy", "targets", "layout")
    deploy = flow.question("deploy")
    assert (deploy.type, deploy.multi, deploy.values) == ("single", False, ("yes", "no"))
    assert flow.question("targets").multi
    no = deploy.option("no")
    assert (no.label, no.description, no.position, no.recommended) == (
        "Hold",
        "wait for QA",
        2,
        None,
    )
    assert deploy.recommended == (deploy.option("yes"),)
    assert flow.question("layout").option("grid").preview == "[][]"


def test_unknown_question_names_flow_question_and_known_ids(flow: FlowView) -> None:
    with pytest.raises(UnknownQuestion) as caught:
        flow.question("Deploy")  # the label, not the id
    error = caught.value
    assert error.code == "unknown_question"
    assert (error.flow_id, error.question_id) == ("tool:plan", "Deploy")
    assert error.known == ("deploy", "targets", "layout")
    assert '"Deploy"' in str(error)
    assert '"deploy"' in str(error)


@pytest.mark.parametrize("text", ["Ship it", "Yes", "YES", " yes", "1"])
def test_labels_case_variants_and_indices_never_match_a_value(flow: FlowView, text: str) -> None:
    deploy = flow.question("deploy")
    with pytest.raises(UnknownOption) as caught:
        deploy.value(text)
    assert (caught.value.question_id, caught.value.value) == ("deploy", text)
    assert caught.value.code == "unknown_option"
    assert not deploy.has_value(text)


def test_value_lookup_returns_the_form_value(flow: FlowView) -> None:
    assert flow.question("deploy").value("yes") == "yes"
    assert flow.question("targets").option("asia").label == "Asia"


def test_views_are_read_only(flow: FlowView) -> None:
    with pytest.raises(AttributeError):
        flow.title = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        flow.question("deploy").option("yes").value = OptionValue("no")  # type: ignore[misc]


def test_same_form_ignores_created_at_and_replay(flow: FlowView) -> None:
    from msgspec.structs import replace

    again = replace(flow, created_at=flow.created_at + 5, replay=True)
    assert flow.same_form(again)
    assert not flow.same_form(replace(flow, title="Other"))
