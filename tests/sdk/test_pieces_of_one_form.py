"""The pieces of one form stay with that form: a question, value, option, answer or mapping
taken from flow A is refused for flow C, before anything is sent, with ``FlowMismatch`` naming
both flows; even when the two forms are identical, and even past ``msgspec.structs.replace``."""

from __future__ import annotations

import pickle

import pytest
from msgspec.structs import replace

from pi_ask_sdk import (
    AnswerBuilder,
    ApprovalMapping,
    Cancel,
    CancelFlow,
    FlowId,
    FlowMismatch,
    FlowView,
    InvalidArgument,
    QuestionAnswer,
    SelectOption,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitTimedOut,
    UnknownOption,
)
from pi_ask_sdk.testing import FakeHost, unchecked_answer, yes_no_params

from .conftest import TIMEOUT
from .helpers import refused_by_label, view_of


@pytest.fixture
def a() -> FlowView:
    return view_of(yes_no_params("deploy"), tool_call_id="a")


@pytest.fixture
def c() -> FlowView:
    return view_of(yes_no_params("deploy"), tool_call_id="c")  # the very same form


def names_both(error: FlowMismatch, piece: str) -> None:
    assert (error.flow_id, error.other_flow_id, error.piece) == ("tool:c", "tool:a", piece)
    assert error.code == "flow_mismatch"
    assert '"tool:c"' in str(error)
    assert '"tool:a"' in str(error)
    assert "nothing was sent" in str(error)


def test_a_value_of_another_flow_is_refused_by_the_builder(a: FlowView, c: FlowView) -> None:
    builder = AnswerBuilder(c)
    with pytest.raises(FlowMismatch) as caught:
        builder.select(c.question("deploy"), a.question("deploy").value("yes"))
    names_both(caught.value, "option value")
    with pytest.raises(FlowMismatch) as caught:
        builder.select(c.question("deploy"), a.question("deploy").option("no"))
    names_both(caught.value, "option value")
    with pytest.raises(FlowMismatch) as caught:
        builder.option_note(c.question("deploy"), a.question("deploy").value("no"), "why")
    names_both(caught.value, "option value")
    assert builder.build().answers == ()  # a call that raises changes nothing


def test_a_question_of_another_flow_is_refused_by_the_builder(a: FlowView, c: FlowView) -> None:
    yes = c.question("deploy").value("yes")
    with pytest.raises(FlowMismatch) as caught:
        AnswerBuilder(c).select(a.question("deploy"), yes)
    names_both(caught.value, "question")
    with pytest.raises(FlowMismatch) as caught:
        AnswerBuilder(c).custom_text(a.question("deploy").id, "text")
    names_both(caught.value, "question id")


def test_a_mapping_made_from_another_flow_is_refused(a: FlowView, c: FlowView) -> None:
    with pytest.raises(FlowMismatch) as caught:
        ApprovalMapping(c, {"Approve": SelectOption(a.question("deploy").value("yes"))})
    names_both(caught.value, "approval mapping")
    # Cancel-only buttons hold no piece of a form: they fit any.
    assert ApprovalMapping(c, {"Dismiss": CancelFlow()}).response("Dismiss") == Cancel.of(c)


def test_a_replayed_view_of_the_same_flow_shares_its_pieces(a: FlowView) -> None:
    again = replace(a, replay=True)
    answer = AnswerBuilder(again).select(again.question("deploy"), a.question("deploy").value("no"))
    assert answer.build().flow_id == a.flow_id


@pytest.mark.asyncio
async def test_nothing_is_sent_for_a_piece_of_another_flow() -> None:
    host = FakeHost()
    async with host.client() as client:
        flows = client.flows()
        host.open(yes_no_params("deploy"), tool_call_id="a")
        host.open(yes_no_params("deploy"), tool_call_id="c")
        a = await flows.next(timeout=TIMEOUT)
        c = await flows.next(timeout=TIMEOUT)
        built = AnswerBuilder(a).select(a.question("deploy"), a.question("deploy").value("yes"))
        for_a = built.build()

        with pytest.raises(FlowMismatch) as caught:
            await client.submit(c, for_a)
        names_both(caught.value, "response")
        # Re-targeted past the flow check: the pieces inside still belong to flow A.
        retargeted = replace(for_a, flow_id=c.flow_id)
        with pytest.raises(FlowMismatch) as caught:
            await client.submit(c, retargeted)
        names_both(caught.value, "answer")
        with pytest.raises(FlowMismatch):
            await client.respond(c, retargeted, timeout=TIMEOUT)
        with pytest.raises(FlowMismatch):
            host.answer(host.flow("tool:c"), retargeted)
        with pytest.raises(FlowMismatch):
            await client.submit(c, unchecked_answer(a, {"deploy": ["yes"]}))
        with pytest.raises(FlowMismatch):
            await client.submit(c, Cancel.of(a))
        assert host.submits == []
        assert set(client.open_flows) == {"tool:a", "tool:c"}

        # What no builder makes, put in with replace: refused, not sent.
        qid = c.question("deploy").id
        plain = QuestionAnswer(("yes",))  # type: ignore[arg-type]
        forged = replace(AnswerBuilder(c).build(), answers=(("deploy", plain),))
        with pytest.raises(InvalidArgument):
            await client.submit(c, forged)
        no_a = a.question("deploy").value("no")
        mixed = replace(AnswerBuilder(c).build(), answers=((qid, QuestionAnswer((no_a,))),))
        with pytest.raises(FlowMismatch) as caught:
            await client.submit(c, mixed)
        names_both(caught.value, "option value")
        other_question = view_of(
            {
                "questions": [
                    {"id": "other", "prompt": "?", "options": [{"value": "yes"}]},
                    {"id": "deploy", "prompt": "?", "options": [{"value": "yes"}]},
                ]
            },
            tool_call_id="c",
        ).question("other")
        moved = replace(
            AnswerBuilder(c).build(),
            answers=((qid, QuestionAnswer((other_question.value("yes"),))),),
        )
        with pytest.raises(UnknownOption):
            await client.submit(c, moved)
        assert host.submits == []

        # The form's own pieces go through.
        outcome = await client.respond(
            c, AnswerBuilder(c).select(qid, c.question(qid).value("no")).build(), timeout=TIMEOUT
        )
        assert isinstance(outcome, SubmitAccepted)
        assert [submit["flowId"] for submit in host.submits] == ["tool:c"]


def test_pieces_pickle_with_their_flow(a: FlowView) -> None:
    yes = a.question("deploy").value("yes")
    again = pickle.loads(pickle.dumps(yes))
    assert again == yes
    assert again.question_id.flow_id == "tool:a"
    qid = pickle.loads(pickle.dumps(a.question("deploy").id))
    assert qid.flow_id == "tool:a"


@pytest.mark.asyncio
async def test_an_outcome_has_no_truth_value() -> None:
    host = FakeHost()
    async with host.client() as client:
        host.open(yes_no_params("deploy"), tool_call_id="a")
        flow = await client.flows().next(timeout=TIMEOUT)
        outcome = await client.respond(flow, Cancel.of(flow), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        with pytest.raises(TypeError, match="no truth value: match the outcome"):
            bool(outcome)
        with pytest.raises(TypeError):
            assert outcome  # type: ignore[truthy-bool]
        handle = host.open(yes_no_params("deploy"), tool_call_id="b")
        second = client.open_flows[FlowId("tool:b")]
        host.cancel(handle)
        not_sent = await client.respond(second, Cancel.of(second), timeout=TIMEOUT)
        assert not_sent == SubmitNotSent(second.flow_id, "flow_completed")
        with pytest.raises(TypeError):
            bool(not_sent)
        rejected = await refused_by_label(host, client, "c")
        for outcome_of_a_sent_submit in (
            rejected,
            SubmitTimedOut(rejected.ticket, TIMEOUT),
            SubmitLost(rejected.ticket, "closed"),
        ):
            with pytest.raises(TypeError):
                bool(outcome_of_a_sent_submit)


def test_reprs_name_public_types(a: FlowView) -> None:
    answer = AnswerBuilder(a).select(a.question("deploy"), a.question("deploy").value("no")).build()
    assert repr(answer).startswith("Answer(flow_id='tool:a'")
    assert "_Built" not in repr(answer)
    assert repr(a.question("deploy").option("yes").label) == "DisplayText('Yes')"
