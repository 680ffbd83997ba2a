"""Typed views of a started form: lookups by exact id/value, never by label."""

from __future__ import annotations

from typing import cast

import pytest

from pi_ask_sdk import (
    DisplayText,
    FlowMismatch,
    FlowView,
    OptionValue,
    QuestionId,
    UnknownOption,
    UnknownQuestion,
)

from .conftest import MULTI_FORM
from .helpers import view_of


@pytest.fixture
def flow() -> FlowView:
    return view_of(MULTI_FORM, tool_call_id="plan")


def test_view_carries_the_started_event(flow: FlowView) -> None:
    assert flow.flow_id == "tool:plan"
    assert flow.tool_call_id == "plan"
    assert flow.source == "tool"
    assert flow.title is not None
    assert flow.title.render() == "Plan"
    assert flow.replay is False
    assert flow.question_ids == ("deploy", "targets", "layout")
    deploy = flow.question("deploy")
    assert (deploy.type, deploy.multi, deploy.values) == ("single", False, ("yes", "no"))
    assert flow.question("targets").multi
    no = deploy.option("no")
    assert (str(no.label), str(no.description), no.position, no.badge) == (
        "Hold",
        "wait for QA",
        2,
        None,
    )
    yes = deploy.option("yes")
    assert yes.badge is not None
    assert yes.badge.render() == "recommended"
    assert f"{yes.label} ({yes.badge})" == "Ship it (recommended)"
    assert str(flow.question("layout").option("grid").preview) == "[][]"
    assert str(deploy.label) == "Deploy"
    assert deploy.prompt.render() == "Deploy now?"


def test_a_question_reads_its_texts_and_types_from_the_started_form(flow: FlowView) -> None:
    # The label, prompt and types are read from the form's question when asked for (not kept
    # per view): the same on every read, read-only, and a question's fields are its id and the
    # question it was made from.
    targets = flow.question("targets")
    assert targets.label == targets.label
    assert isinstance(targets.label, DisplayText)
    assert (str(targets.label), str(targets.prompt)) == ("Q2", "Which targets?")
    assert (targets.type, targets.requested_type, targets.required) == ("multi", "multi", False)
    with pytest.raises(AttributeError):
        targets.label = flow.question("deploy").label  # type: ignore[misc]
    assert targets == view_of(MULTI_FORM, tool_call_id="plan").question("targets")
    assert targets != flow.question("deploy")


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


def test_a_label_passed_as_a_value_is_named_by_its_text(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    label = deploy.option("yes").label
    with pytest.raises(UnknownOption) as caught:
        deploy.value(label)  # type: ignore[arg-type]  # what an untyped bridge might do
    assert caught.value.value == "Ship it"
    assert 'no option value "Ship it"' in str(caught.value)
    assert "DisplayText" not in str(caught.value)


def test_value_lookup_returns_the_form_value(flow: FlowView) -> None:
    value = flow.question("deploy").value("yes")
    assert value == "yes"
    assert type(str(value)) is str
    assert value.question_id == "deploy"
    assert flow.question("targets").option("asia").label.render() == "Asia"


def test_values_keep_their_question_through_copy_and_pickle(flow: FlowView) -> None:
    import copy
    import pickle

    value = flow.question("deploy").value("yes")
    for again in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert (again, again.question_id, type(again)) == ("yes", "deploy", type(value))
    # The question id lives in a slot: a value has no __dict__ to grow per instance.
    assert not hasattr(value, "__dict__")
    with pytest.raises(AttributeError):
        value.extra = 1  # type: ignore[attr-defined]


def test_values_and_ids_cannot_be_made_from_a_str() -> None:
    with pytest.raises(TypeError, match="take it from a QuestionView"):
        OptionValue("yes")  # type: ignore[abstract]
    with pytest.raises(TypeError, match="take it from a QuestionView"):
        QuestionId("deploy")  # type: ignore[abstract]
    # Their __new__ is set after the classes (see forms._refuse_construction): still refusing.
    with pytest.raises(
        TypeError,
        match=r"^OptionValue cannot be constructed; take it from a "
        r'QuestionView \(question\.value\("\.\.\."\), option\.value\)$',
    ):
        OptionValue.__new__(OptionValue, "yes")  # type: ignore[type-abstract]
    with pytest.raises(
        TypeError,
        match=r"^QuestionId cannot be constructed; take it from a "
        r"QuestionView \(\.id\)$",
    ):
        QuestionId.__new__(QuestionId)  # type: ignore[type-abstract]
    with pytest.raises(TypeError, match="cannot be subclassed"):

        class Mine(OptionValue):  # pragma: no cover - refused at class creation
            @property
            def question_id(self) -> QuestionId:
                raise AssertionError

    with pytest.raises(TypeError, match="cannot be subclassed"):

        class MyId(QuestionId):  # pragma: no cover - refused at class creation
            def _from_form(self) -> None:
                raise AssertionError


def test_display_text_is_not_a_str(flow: FlowView) -> None:
    label = flow.question("deploy").option("yes").label
    assert not isinstance(cast(object, label), str)
    assert label != "Ship it"  # type: ignore[comparison-overlap]
    assert str(label) == label.render() == "Ship it"
    assert f"[{label:>8}]" == "[ Ship it]"
    assert repr(label) == "DisplayText('Ship it')"  # no private class name
    assert label == flow.question("deploy").option("yes").label  # same text, same type


def test_display_text_cannot_be_made_by_a_bridge() -> None:
    with pytest.raises(TypeError, match="choose by option value"):
        DisplayText("Yes")  # type: ignore[abstract]
    with pytest.raises(TypeError):
        DisplayText(_text="Yes")  # type: ignore[abstract]


def test_pieces_know_their_flow(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    assert deploy.id.flow_id == "tool:plan"
    assert deploy.value("yes").question_id.flow_id == "tool:plan"
    assert repr(deploy.id) == "QuestionId('deploy', flow_id='tool:plan')"
    assert repr(deploy.value("yes")) == "OptionValue('yes', question_id='deploy')"


def test_a_question_id_of_another_flow_is_refused_by_lookup(flow: FlowView) -> None:
    other = view_of(MULTI_FORM, tool_call_id="other")
    with pytest.raises(FlowMismatch) as caught:
        flow.question(other.question("deploy").id)
    error = caught.value
    assert (error.flow_id, error.other_flow_id, error.piece) == (
        "tool:plan",
        "tool:other",
        "question id",
    )
    assert flow.question("deploy").id == other.question("deploy").id  # still equal as str


def test_views_are_read_only(flow: FlowView) -> None:
    with pytest.raises(AttributeError):
        flow.title = flow.question("deploy").label  # type: ignore[misc]
    with pytest.raises(AttributeError):
        flow.question("deploy").option("yes").value = flow.question("deploy").value("no")  # type: ignore[misc]


def test_same_form_ignores_created_at_and_replay(flow: FlowView) -> None:
    from msgspec.structs import replace

    again = replace(flow, created_at=flow.created_at + 5, replay=True)
    assert flow.same_form(again)
    assert not flow.same_form(replace(flow, title=flow.question("deploy").label))
