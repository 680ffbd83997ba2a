"""Response builders: values only, the host's §4.3 checks run locally, cancel is its own type."""

from __future__ import annotations

from typing import cast

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
    FlowId,
    FlowMismatch,
    FlowView,
    InvalidArgument,
    InvalidResponse,
    QuestionAnswer,
    Response,
    SelectOption,
    UnknownOption,
    UnknownQuestion,
)
from pi_ask_sdk.testing import AskParams, FakeHost, yes_no_params

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
    assert not isinstance(cast(object, cancel), Answer)
    # An answer never encodes to a cancel, even with nothing selected.
    empty = AnswerBuilder(flow).build()
    assert isinstance(empty.to_wire(), AnswerResponse)
    assert msgspec.to_builtins(empty.to_wire())["kind"] == "answer"


# A form whose "deploy" question has other values: its OptionValues are unknown to MULTI_FORM.
SHIP_HOLD: AskParams = {
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [{"value": "ship", "label": "yes"}, {"value": "hold", "label": "no"}],
        }
    ]
}


def host_refusal(entry: dict[str, object]) -> SubmitRefused:
    """What a real host says about this answer to MULTI_FORM's question ``deploy``."""
    handle = FakeHost(record=False).open(MULTI_FORM, tool_call_id="plan")
    with pytest.raises(SubmitRefused) as refused:
        handle.complete({"kind": "answer", "answers": {"deploy": entry}})
    return refused.value


def test_a_label_is_never_a_value(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    with pytest.raises(UnknownOption) as caught:
        deploy.value("Ship it")  # the label of value "yes"
    assert (caught.value.question_id, caught.value.value) == ("deploy", "Ship it")
    with pytest.raises(InvalidArgument) as wrong:
        AnswerBuilder(flow).select(deploy, "yes")  # type: ignore[arg-type]
    assert (wrong.value.method, wrong.value.argument) == ("select", "options")
    label = deploy.option("yes").label
    with pytest.raises(InvalidArgument):
        AnswerBuilder(flow).select(deploy, label)  # type: ignore[arg-type]


def test_unknown_question_is_refused(flow: FlowView) -> None:
    with pytest.raises(UnknownQuestion) as caught:
        flow.question("Deploy")
    assert caught.value.question_id == "Deploy"
    with pytest.raises(InvalidArgument) as wrong:
        AnswerBuilder(flow).select("deploy")  # type: ignore[arg-type]
    assert wrong.value.argument == "question"


def test_views_from_another_form_or_question_are_refused(flow: FlowView) -> None:
    # The same flow id re-announced with another form (spec §3.7): its view is not this one's.
    other = view_of(yes_no_params("deploy", prompt="Another prompt"), tool_call_id="plan")
    with pytest.raises(UnknownQuestion):
        AnswerBuilder(flow).select(other.question("deploy"), flow.question("deploy").value("yes"))
    targets = flow.question("targets")
    with pytest.raises(UnknownOption) as caught:
        AnswerBuilder(flow).select(flow.question("deploy"), targets.value("eu"))
    assert "targets" in str(caught.value)


def test_values_of_a_reannounced_form_are_refused_by_the_hosts_rule(flow: FlowView) -> None:
    # The flow id re-announced with other options (spec §3.7): the old values are unknown.
    ship = view_of(SHIP_HOLD, tool_call_id="plan").question("deploy").value("ship")
    with pytest.raises(InvalidResponse) as caught:
        AnswerBuilder(flow).select(flow.question("deploy").id, ship)
    host = host_refusal({"values": ["ship"]})
    assert (caught.value.problem, caught.value.host_error) == ("unknown_value", host.code)
    assert caught.value.host_message == host.message


@pytest.mark.parametrize(
    ("values", "custom", "rule"),
    [
        # In the host's order: duplicates, one value, value with text, then unknown values.
        (["ship", "ship"], None, "duplicate_value"),
        (["ship", "hold"], None, "too_many_values"),
        (["ship"], "other", "value_with_custom_text"),
        (["ship"], None, "unknown_value"),
    ],
)
def test_local_refusal_names_the_rule_the_host_would(
    flow: FlowView, values: list[str], custom: str | None, rule: str
) -> None:
    foreign = view_of(SHIP_HOLD, tool_call_id="plan").question("deploy")  # re-announced
    deploy = flow.question("deploy")
    builder = AnswerBuilder(flow)
    if custom is not None:
        builder.custom_text(deploy, custom)
    with pytest.raises(InvalidResponse) as caught:
        builder.select(deploy.id, *(foreign.value(v) for v in values))
    entry: dict[str, object] = {"values": values}
    if custom is not None:
        entry["customText"] = custom
    host = host_refusal(entry)
    assert caught.value.problem == rule
    assert caught.value.host_message == host.message
    assert caught.value.question_id == "deploy"


@pytest.mark.parametrize(
    ("values", "custom", "rule"),
    [
        (["yes", "yes"], None, "duplicate_value"),
        (["yes", "no"], None, "too_many_values"),
        (["yes"], "other", "value_with_custom_text"),
    ],
)
def test_own_values_are_refused_with_the_hosts_message(
    flow: FlowView, values: list[str], custom: str | None, rule: str
) -> None:
    # The form's own values skip the option table (they cannot be unknown): the rules that can
    # still fail give the host's rule and message all the same.
    deploy = flow.question("deploy")
    builder = AnswerBuilder(flow)
    if custom is not None:
        builder.custom_text(deploy, custom)
    with pytest.raises(InvalidResponse) as caught:
        builder.select(deploy, *(deploy.value(v) for v in values))
    entry: dict[str, object] = {"values": values}
    if custom is not None:
        entry["customText"] = custom
    host = host_refusal(entry)
    assert (caught.value.problem, caught.value.question_id) == (rule, "deploy")
    assert caught.value.host_message == host.message


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


def test_a_refused_call_leaves_the_builder_unchanged(flow: FlowView) -> None:
    deploy = flow.question("deploy")
    builder = AnswerBuilder(flow).select(deploy, deploy.value("no"))
    with pytest.raises(InvalidResponse):
        builder.custom_text(deploy, "other")
    with pytest.raises(InvalidResponse):
        builder.select(deploy, deploy.value("no"), deploy.value("yes"))
    assert msgspec.to_builtins(builder.build().to_wire())["answers"] == {
        "deploy": {"values": ["no"]}
    }


def test_option_notes_only_for_real_options(flow: FlowView) -> None:
    hold = view_of(SHIP_HOLD, tool_call_id="plan").question("deploy").value("hold")
    with pytest.raises(InvalidResponse) as caught:
        AnswerBuilder(flow).option_note(flow.question("deploy").id, hold, "hm")
    assert caught.value.problem == "unknown_option_note"
    assert caught.value.host_message == host_refusal({"optionNotes": {"hold": "hm"}}).message


@pytest.mark.parametrize(
    ("call", "method", "argument"),
    [
        (lambda b, q: b.mode("approve"), "mode", "mode"),
        (lambda b, q: b.mode(None), "mode", "mode"),
        (lambda b, q: b.custom_text(q, None), "custom_text", "text"),
        (lambda b, q: b.custom_text(q, 5), "custom_text", "text"),
        (lambda b, q: b.note(q, b"x"), "note", "text"),
        (lambda b, q: b.option_note(q, q.options[0], None), "option_note", "text"),
        (lambda b, q: b.option_note(q, "yes", "x"), "option_note", "option"),
        (lambda b, q: b.select(q, None), "select", "options"),
        (lambda b, q: b.select(str(q.id)), "select", "question"),
    ],
)
def test_wrong_argument_types_raise_a_typed_error_naming_the_argument(
    flow: FlowView, call: object, method: str, argument: str
) -> None:
    builder = AnswerBuilder(flow)
    with pytest.raises(InvalidArgument) as caught:
        call(builder, flow.question("deploy"))  # type: ignore[operator]
    assert (caught.value.code, caught.value.method, caught.value.argument) == (
        "invalid_argument",
        method,
        argument,
    )
    assert repr(argument) in str(caught.value)
    assert isinstance(caught.value, TypeError)
    with pytest.raises(InvalidArgument):
        AnswerBuilder(flow, mode="cancel")  # type: ignore[arg-type]


def test_answer_is_made_only_by_the_builder(flow: FlowView) -> None:
    with pytest.raises(TypeError, match="AnswerBuilder"):
        Answer(FlowId("tool:plan"), ())  # type: ignore[abstract]
    answer = AnswerBuilder(flow).build()
    assert isinstance(answer, Answer)
    assert answer.answers == ()
    assert isinstance(QuestionAnswer(), QuestionAnswer)


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
        local: InvalidResponse | None = None
    except InvalidResponse as error:
        built, local = None, error
    try:
        handle.complete({"kind": "answer", "answers": raw_answers})
        host_refusal: SubmitRefused | None = None
    except SubmitRefused as refused:
        assert refused.code == "invalid_answer"
        host_refusal = refused
    assert (built is None) == (host_refusal is not None)
    if local is not None and host_refusal is not None:
        # The same rule, worded as the host words it (checked call by call, in host order).
        assert local.host_message == host_refusal.message
    if built is not None:
        # And what the builder produces is itself accepted by a fresh host.
        again = FakeHost(record=False).open(MULTI_FORM, tool_call_id="plan")
        again.complete(built.to_wire())


# --- approval mappings ---------------------------------------------------------------------------


def buttons_for(flow: FlowView) -> ApprovalMapping:
    deploy = flow.question("deploy")
    return ApprovalMapping(
        flow,
        {
            "Approve": SelectOption(deploy.value("yes")),
            "Reject": SelectOption(deploy.value("no")),
            "Dismiss": CancelFlow(),
        },
    )


BUTTONS = buttons_for(view_of(yes_no_params("deploy")))


def test_mapping_turns_buttons_into_explicit_values() -> None:
    flow = view_of(yes_no_params("deploy"), tool_call_id="again")
    bound = buttons_for(flow)
    assert bound.flow is flow
    again = view_of(yes_no_params("deploy"), tool_call_id="again")  # re-announced
    assert bound.bind(again).flow is again
    approve = bound.response("Approve")
    assert isinstance(approve, Answer)
    assert approve.flow_id == flow.flow_id
    assert msgspec.to_builtins(approve.to_wire())["answers"] == {"deploy": {"values": ["yes"]}}
    reject = bound.response("Reject")
    assert isinstance(reject, Answer)
    entry = reject.get("deploy")
    assert entry is not None
    assert entry.values == ("no",)
    assert isinstance(bound.response("Dismiss"), Cancel)
    action = bound.action("Approve")
    assert isinstance(action, SelectOption)
    assert (action.question_id, action.value, action.kind) == ("deploy", "yes", "select")
    assert action == SelectOption(flow.question("deploy").value("yes"))
    with pytest.raises(AttributeError):
        action.value = flow.question("deploy").value("no")  # type: ignore[misc]


def test_a_mapping_of_another_flow_is_refused_naming_both_flows() -> None:
    flow = view_of(yes_no_params("deploy"), tool_call_id="again")
    with pytest.raises(FlowMismatch) as caught:
        BUTTONS.bind(flow)  # declared from tool:call-1's values
    error = caught.value
    assert (error.flow_id, error.other_flow_id, error.piece) == (
        "tool:again",
        "tool:call-1",
        "approval mapping",
    )
    assert "tool:again" in str(error)
    assert "tool:call-1" in str(error)


def test_mapping_fails_loudly_on_a_missing_question() -> None:
    # The flow id re-announced with another form (spec §3.7): same flow, other questions.
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
    params: AskParams = {
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
    with pytest.raises(InvalidArgument):
        ApprovalMapping(view_of(yes_no_params("deploy")), {"Approve": "yes"})  # type: ignore[dict-item]
    with pytest.raises(InvalidArgument) as caught:
        SelectOption("yes")  # type: ignore[arg-type]
    assert caught.value.argument == "value"


def test_values_of_another_view_of_the_same_form_are_checked_and_taken(flow: FlowView) -> None:
    # Not handed out by this flow's own view, so the host's rules run on them (and pass).
    again = view_of(MULTI_FORM, tool_call_id="plan")
    targets = again.question("targets")
    eu, asia = targets.value("eu"), targets.value("asia")
    answer = (
        AnswerBuilder(flow)
        .select(flow.question("targets"), eu, asia)
        .option_note(flow.question("targets").id, asia, "later")
        .build()
    )
    assert answer.get("targets") == QuestionAnswer((eu, asia), None, None, ((asia, "later"),))


def test_to_builtins_is_the_wire_as_decoded_json_in_the_same_order(flow: FlowView) -> None:
    # What to_data writes (with to_builtins) must be exactly what the wire Struct encodes to,
    # key order included.
    deploy, targets = flow.question("deploy"), flow.question("targets")
    eu, us = targets.value("eu"), targets.value("us")
    responses: list[Response] = [
        AnswerBuilder(flow).build(),
        AnswerBuilder(flow).select(deploy, deploy.value("yes")).build(),
        AnswerBuilder(flow).custom_text(deploy, "later").note(deploy, "why").build(),
        AnswerBuilder(flow, mode="elaborate").note(targets, "which?").build(),
        AnswerBuilder(flow)
        .select(targets, us, eu)
        .custom_text(targets, "mars")
        .option_note(targets, eu, "first")
        .select(deploy, deploy.value("no"))
        .build(),
        Cancel.of(flow),
    ]
    for response in responses:
        wire = msgspec.json.encode(response.to_wire())
        assert msgspec.json.encode(response.to_builtins()) == wire
        assert response.to_builtins() == msgspec.to_builtins(response.to_wire())


def test_later_calls_replace_in_place_and_never_change_a_built_answer(flow: FlowView) -> None:
    # The builder keeps each question's answer as it stands; build() hands out those values,
    # so what later calls change must not show in an answer built before them.
    deploy, targets = flow.question("deploy"), flow.question("targets")
    yes, no = deploy.value("yes"), deploy.value("no")
    builder = (
        AnswerBuilder(flow)
        .option_note(deploy, yes, "tempting")
        .option_note(deploy, no, "safe")
        .note(deploy, "after QA")
        .select(deploy, yes)
    )
    first = builder.build()
    builder.option_note(deploy, yes, "changed").select(deploy, no).note(deploy, " ")
    builder.option_note(deploy, no, "").option_note(targets, targets.value("eu"), " ")
    assert first.get("deploy") == QuestionAnswer(
        (yes,), None, "after QA", ((yes, "tempting"), (no, "safe"))
    )
    # A replaced note keeps its place; a blank one removes the note; a blank note on a
    # question with no answer yet adds nothing.
    assert builder.build().answers == (
        ("deploy", QuestionAnswer((no,), None, None, ((yes, "changed"),))),
    )
    # A view of the same question of an identical form serves as this form's own.
    twin = view_of(MULTI_FORM, tool_call_id="plan").question("targets")
    answer = builder.select(twin, twin.value("us")).custom_text(twin, "mars").build()
    assert answer.get("targets") == QuestionAnswer((twin.value("us"),), "mars")
    assert msgspec.to_builtins(answer.to_wire())["answers"]["targets"] == {
        "values": ["us"],
        "customText": "mars",
    }
