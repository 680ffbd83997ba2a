"""Response builders: values only, §4.3 enforced locally, cancel is its own type."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_ask_core import AnswerResponse, CancelResponse, SubmitRefused
from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    ApprovalMapping,
    ApprovalMappingError,
    Cancel,
    CancelFlow,
    FlowView,
    InvalidResponse,
    OptionValue,
    QuestionId,
    SelectOption,
    UnknownOption,
    UnknownQuestion,
)
from pi_ask_sdk.testing import FakeHost, yes_no_params

from .conftest import MULTI_FORM
from .helpers import view_of


@pytest.fixture
def flow() -> FlowView:
    return view_of(MULTI_FORM, tool_call_id="plan")


def test_answer_by_view_and_by_value_gives_the_exact_wire(flow: FlowView) -> None:
    deploy, targets = flow.question("deploy"), flow.question("targets")
    answer = (
        AnswerBuilder(flow)
        .select(deploy, deploy.option("no"))
        .note(deploy, "after QA")
        .option_note(deploy, deploy.value("yes"), "tempting")
        .select(targets, targets.value("us"), targets.option("eu"))
        .custom_text(targets, "mars")
        .build()
    )
    assert answer.kind == "answer"
    assert answer.flow_id == "tool:plan"
    assert msgspec.to_builtins(answer.to_wire()) == {
        "kind": "answer",
        "mode": "submit",
        "answers": {
            "deploy": {"values": ["no"], "note": "after QA", "optionNotes": {"yes": "tempting"}},
            "targets": {"values": ["us", "eu"], "customText": "mars"},
        },
    }


def test_cancel_is_its_own_type_and_wire(flow: FlowView) -> None:
    cancel = Cancel.of(flow)
    assert cancel.kind == "cancel"
    assert isinstance(cancel.to_wire(), CancelResponse)
    assert not isinstance(cancel, Answer)
    # An answer never encodes to a cancel, even with nothing selected.
    empty = AnswerBuilder(flow).build()
    assert isinstance(empty.to_wire(), AnswerResponse)
    assert msgspec.to_builtins(empty.to_wire())["kind"] == "answer"


def test_label_is_refused_naming_question_and_value(flow: FlowView) -> None:
    builder = AnswerBuilder(flow)
    with pytest.raises(UnknownOption) as caught:
        builder.select(QuestionId("deploy"), OptionValue("Ship it"))
    assert (caught.value.question_id, caught.value.value) == ("deploy", "Ship it")
    assert "Ship it" in str(caught.value)
    assert "deploy" in str(caught.value)


def test_unknown_question_is_refused(flow: FlowView) -> None:
    with pytest.raises(UnknownQuestion) as caught:
        AnswerBuilder(flow).select(QuestionId("Deploy"), OptionValue("yes"))
    assert caught.value.question_id == "Deploy"


def test_views_from_another_form_are_refused(flow: FlowView) -> None:
    other = view_of(yes_no_params("deploy", prompt="Another prompt"), tool_call_id="other")
    with pytest.raises(UnknownQuestion):
        AnswerBuilder(flow).select(other.question("deploy"), OptionValue("yes"))
    with pytest.raises(UnknownOption):
        AnswerBuilder(flow).select(QuestionId("deploy"), other.question("deploy").option("yes"))


@pytest.mark.parametrize("qid", ["deploy", "layout"])
def test_single_and_preview_take_one_value(flow: FlowView, qid: str) -> None:
    question = flow.question(qid)
    with pytest.raises(InvalidResponse) as caught:
        AnswerBuilder(flow).select(question, *question.options)
    assert (caught.value.problem, caught.value.question_id) == ("too_many_values", qid)


def test_duplicates_refused_even_on_multi(flow: FlowView) -> None:
    targets = flow.question("targets")
    with pytest.raises(InvalidResponse) as caught:
        AnswerBuilder(flow).select(targets, targets.value("eu"), targets.value("eu"))
    assert caught.value.problem == "duplicate_value"


@pytest.mark.parametrize("qid", ["deploy", "layout"])
def test_value_plus_custom_text_only_on_multi(flow: FlowView, qid: str) -> None:
    question = flow.question(qid)
    first = question.options[0]
    with pytest.raises(InvalidResponse) as caught:
        AnswerBuilder(flow).select(question, first).custom_text(question, "other")
    assert caught.value.problem == "value_with_custom_text"
    with pytest.raises(InvalidResponse):
        AnswerBuilder(flow).custom_text(question, "other").select(question, first)
    # Blank custom text is ignored by the host, so it does not conflict.
    built = AnswerBuilder(flow).select(question, first).custom_text(question, " \t").build()
    entry = built.get(qid)
    assert entry is not None
    assert entry.values == (first.value,)
    assert entry.custom_text is None


def test_option_notes_only_for_real_options(flow: FlowView) -> None:
    with pytest.raises(UnknownOption):
        AnswerBuilder(flow).option_note(QuestionId("deploy"), OptionValue("maybe"), "hm")


def test_elaborate_mode(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    answer = AnswerBuilder(flow, mode="elaborate").note(deploy, "why?").build()
    assert answer.mode == "elaborate"
    assert AnswerBuilder(flow).mode("elaborate").build().mode == "elaborate"


# --- the builder agrees with the host (the host is authoritative) ------------------------------


@st.composite
def attempts(draw: st.DrawFn) -> list[tuple[str, list[str], str | None]]:
    """Per question: chosen values (possibly duplicated) and optional custom text."""
    plan = []
    for qid, values in (("deploy", ["yes", "no"]), ("targets", ["eu", "us", "asia"])):
        if draw(st.booleans()):
            chosen = draw(st.lists(st.sampled_from(values), max_size=3))
            custom = draw(st.sampled_from([None, "", " ", "free text"]))
            plan.append((qid, chosen, custom))
    return plan


@settings(max_examples=150, deadline=None)
@given(attempts())
def test_builder_refuses_exactly_what_the_host_refuses(
    plan: list[tuple[str, list[str], str | None]],
) -> None:
    host = FakeHost(record=False)
    handle = host.open(MULTI_FORM, tool_call_id="plan")
    flow = view_of(MULTI_FORM, tool_call_id="plan")
    raw_answers: dict[str, dict[str, object]] = {}
    for qid, chosen, custom in plan:
        entry: dict[str, object] = {"values": chosen}
        if custom is not None:
            entry["customText"] = custom
        raw_answers[qid] = entry
    try:
        builder = AnswerBuilder(flow)
        for qid, chosen, custom in plan:
            question = flow.question(qid)
            if custom is not None:
                builder.custom_text(question, custom)
            builder.select(question, *(question.value(v) for v in chosen))
        built: Answer | None = builder.build()
    except InvalidResponse:
        built = None
    try:
        handle.complete({"kind": "answer", "answers": raw_answers})
        host_accepts = True
    except SubmitRefused as refused:
        assert refused.code == "invalid_answer"
        host_accepts = False
    assert (built is not None) == host_accepts
    if built is not None:
        # And what the builder produces is itself accepted by a fresh host.
        again = FakeHost(record=False).open(MULTI_FORM, tool_call_id="plan")
        again.complete(built.to_wire())


# --- approval mappings ---------------------------------------------------------------------------

BUTTONS = ApprovalMapping(
    {
        "Approve": SelectOption("deploy", "yes"),
        "Reject": SelectOption("deploy", "no"),
        "Dismiss": CancelFlow(),
    }
)


def test_mapping_turns_buttons_into_explicit_values() -> None:
    flow = view_of(yes_no_params("deploy"))
    bound = BUTTONS.bind(flow)
    approve = bound.response("Approve")
    assert isinstance(approve, Answer)
    assert msgspec.to_builtins(approve.to_wire())["answers"] == {"deploy": {"values": ["yes"]}}
    reject = bound.response("Reject")
    assert isinstance(reject, Answer)
    entry = reject.get("deploy")
    assert entry is not None
    assert entry.values == ("no",)
    assert isinstance(bound.response("Dismiss"), Cancel)


def test_mapping_fails_loudly_on_a_missing_question() -> None:
    flow = view_of(yes_no_params("release"))
    with pytest.raises(ApprovalMappingError) as caught:
        BUTTONS.bind(flow)
    error = caught.value
    assert (error.problem, error.button, error.question_id, error.value) == (
        "question_not_in_form",
        "Approve",
        "deploy",
        "yes",
    )
    assert "Approve" in str(error)
    assert "deploy" in str(error)


def test_mapping_fails_loudly_on_a_missing_value_even_if_a_label_matches() -> None:
    params = {
        "questions": [
            {
                "id": "deploy",
                "prompt": "Deploy?",
                "options": [
                    {"value": "approve", "label": "yes"},  # label "yes" must not match value "yes"
                    {"value": "no", "label": "No"},
                ],
            }
        ]
    }
    with pytest.raises(ApprovalMappingError) as caught:
        BUTTONS.bind(view_of(params))
    assert (caught.value.problem, caught.value.button, caught.value.value) == (
        "value_not_in_question",
        "Approve",
        "yes",
    )
    assert caught.value.known == ("approve", "no")


def test_unknown_button_is_refused() -> None:
    bound = BUTTONS.bind(view_of(yes_no_params("deploy")))
    with pytest.raises(ApprovalMappingError) as caught:
        bound.response("approve")  # a near-miss of "Approve" is not guessed
    assert caught.value.problem == "unknown_button"


def test_mapping_refuses_non_actions() -> None:
    with pytest.raises(TypeError):
        ApprovalMapping({"Approve": "yes"})  # type: ignore[dict-item]
