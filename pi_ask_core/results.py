"""AskResult building (spec §5): values, labels, 1-based indices, notes, elaborate, cancel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from msgspec import UNSET

from .answers import AcceptedAnswer
from .forms import Form
from .js import js_object
from .protocol import (
    AskContinuationPayload,
    AskElaborationPayload,
    AskOption,
    AskQuestion,
    AskQuestionSummary,
    AskResult,
    AskResultAnswer,
    ContextOption,
    ElaborationItem,
    ElaborationQuestionContext,
    OptionTarget,
    QuestionState,
    QuestionTarget,
    ResultMode,
)

__all__ = [
    "ELABORATION_INSTRUCTION",
    "build_result",
    "is_committed",
    "is_empty",
    "serialize_answer",
    "summarize_question",
]

# Our own wording (spec conventions): what the agent should do with an elaboration request.
ELABORATION_INSTRUCTION: Final = (
    "The user asked for clarification instead of answering. Reply to each note below first, "
    "directly and briefly, using the question and option context given; the notes are not final "
    "answers. Afterwards ask again only the questions that still need a choice, and do not move "
    "on to new questions until the notes are resolved."
)

# Immutable leaves (frozen, no lists inside), so every result can hold the same ones.
_QUESTION_TARGET: Final = QuestionTarget()
_ANSWERED: Final = QuestionState(status="answered")
_NEEDS_CLARIFICATION: Final = QuestionState(status="needs_clarification")
_UNANSWERED: Final = QuestionState(status="unanswered")


def serialize_answer(answer: AcceptedAnswer) -> AskResultAnswer:
    """§5.1: one accepted answer as it appears in a result."""
    selections = answer.selections
    values = [selection.value for selection in selections]
    labels = [selection.label for selection in selections]
    indices = [selection.index for selection in selections]
    custom = answer.custom_text
    if custom is not None:
        values.append(custom)
        labels.append(custom)
    notes = answer.option_notes
    # the non-empty notes of selected options
    selected_notes = (
        js_object([(s.value, notes[s.value]) for s in selections if notes.get(s.value)])
        if notes
        else None
    )
    return AskResultAnswer(
        values=values,
        labels=labels,
        indices=indices,
        custom_text=custom if custom is not None else UNSET,
        note=answer.note if answer.note is not None else UNSET,
        option_notes=selected_notes if selected_notes else UNSET,
    )


def is_empty(answer: AskResultAnswer) -> bool:
    """No value, label, index, custom text, note or option note."""
    return not (
        answer.values
        or answer.labels
        or answer.indices
        or answer.custom_text is not UNSET
        or answer.note is not UNSET
        or answer.option_notes is not UNSET
    )


def is_committed(answer: AskResultAnswer) -> bool:
    """At least one value, label or index, or a custom text."""
    return bool(answer.values or answer.labels or answer.indices or answer.custom_text is not UNSET)


def summarize_question(question: AskQuestion) -> AskQuestionSummary:
    """A question as a result lists it (spec §5): its requested type, and the presented one
    when they differ."""
    requested, presented = question.requested, question.presented_type
    return AskQuestionSummary(
        id=question.id,
        label=question.label,
        prompt=question.prompt,
        type=requested,
        presented_type=UNSET if presented == requested else presented,
    )


def _context_option(option: AskOption) -> ContextOption:
    return ContextOption(
        value=option.value,
        label=option.label,
        description=option.description,
        preview=option.preview,
        recommended=option.recommended,
    )


def _question_context(
    question: AskQuestion, summary: AskQuestionSummary
) -> ElaborationQuestionContext:
    options = [_context_option(option) for option in question.options]
    return ElaborationQuestionContext(
        id=summary.id,
        label=summary.label,
        prompt=summary.prompt,
        type=summary.type,
        presented_type=summary.presented_type,
        options=options,
    )


def _elaboration_items(
    question: AskQuestion,
    summary: AskQuestionSummary,
    accepted: AcceptedAnswer,
    serialized: AskResultAnswer,
) -> list[ElaborationItem]:
    answered = is_committed(serialized)
    answer = serialized if answered else UNSET
    context = _question_context(question, summary)
    items = []
    if accepted.note is not None:
        items.append(
            ElaborationItem(
                target=_QUESTION_TARGET,
                question=context,
                answered=answered,
                answer=answer,
                note=accepted.note,
            )
        )
    if not accepted.option_notes:
        return items
    # An option item holds the context's own ContextOption (frozen, no lists: safe to share).
    options = {option.value: option for option in context.options}
    selected = {selection.value for selection in accepted.selections}
    for value, note in accepted.option_notes.items():
        option = options.get(value)
        if option is None or not note:
            continue
        items.append(
            ElaborationItem(
                target=OptionTarget(option_value=value),
                question=context,
                option=option,
                selected=value in selected,
                answered=answered,
                answer=answer,
                note=note,
            )
        )
    return items


def build_result(
    form: Form,
    answers: Mapping[str, AcceptedAnswer],
    *,
    mode: ResultMode = "submit",
    cancelled: bool = False,
) -> AskResult:
    """§5: the result of a form given its accepted answer set (in its key order).

    A cancelled result always uses submit rules (§5.6) whatever ``mode`` says.

    Args:
        form: The validated form.
        answers: The accepted answers by question id, in the order the result lists them.
        mode: ``"submit"`` or ``"elaborate"``.
        cancelled: Whether the flow was cancelled.
    """
    summaries = [summarize_question(question) for question in form.questions]
    serialized = {qid: serialize_answer(answer) for qid, answer in answers.items()}
    if cancelled or mode == "submit":
        kept = {qid: answer for qid, answer in serialized.items() if not is_empty(answer)}
        return AskResult(
            title=form.title, cancelled=cancelled, mode="submit", questions=summaries, answers=kept
        )
    kept = {qid: answer for qid, answer in serialized.items() if is_committed(answer)}
    # One pass over the questions for the items and the continuation (both in form order).
    items: list[ElaborationItem] = []
    affected: list[str] = []
    preserved: dict[str, AskResultAnswer] = {}
    states: dict[str, QuestionState] = {}
    for question, summary in zip(form.questions, summaries, strict=True):
        qid = question.id
        accepted = answers.get(qid)
        # Only a note or option notes make items: no context is built for the other answers.
        if accepted is not None and (accepted.note is not None or accepted.option_notes):
            items += _elaboration_items(question, summary, accepted, serialized[qid])
            affected.append(qid)
            states[qid] = _NEEDS_CLARIFICATION
        elif qid in kept:
            preserved[qid] = kept[qid]
            states[qid] = _ANSWERED
        else:
            states[qid] = _UNANSWERED
    # the objects' keys in JavaScript property order, as the reference has them
    preserved, states = js_object(preserved.items()), js_object(states.items())
    return AskResult(
        title=form.title,
        cancelled=False,
        mode=mode,
        questions=summaries,
        answers=kept,
        continuation=AskContinuationPayload(
            affected_question_ids=affected,
            preserved_answers=preserved,
            question_states=states,
        ),
        elaboration=AskElaborationPayload(instruction=ELABORATION_INSTRUCTION, items=items),
    )
