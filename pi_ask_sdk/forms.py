"""Typed, read-only views of a started form: ``FlowView`` / ``QuestionView`` / ``OptionView``.

Ids and option values are ``NewType``s of ``str`` so that mypy tells a value taken from the form
apart from a label or any other string: a response builder accepts an ``OptionValue`` or an
``OptionView``, never a bare ``str``. Lookups are by exact value/id; labels never match.
Descriptions, previews and recommendation markers are presentation data only: they never change
what is sent.
"""

from __future__ import annotations

from typing import NewType

import msgspec
from msgspec import UnsetType

from pi_ask_core import AskOption, AskQuestion, FlowSource, QuestionType, StartedEvent

from .errors import UnknownOption, UnknownQuestion

__all__ = ["FlowId", "FlowView", "OptionValue", "OptionView", "QuestionId", "QuestionView"]

FlowId = NewType("FlowId", str)
"""The ``flowId`` of a started event; what a submit is addressed to."""
QuestionId = NewType("QuestionId", str)
"""A question ``id`` from a started event (the keys of an answer)."""
OptionValue = NewType("OptionValue", str)
"""An option ``value`` from a started event: the only thing a bridge may send to select it."""


def _opt(value: str | UnsetType) -> str | None:
    return None if isinstance(value, UnsetType) else value


class OptionView(msgspec.Struct, frozen=True):
    """One option of a question. Only ``value`` is ever sent; the rest is for display."""

    question_id: QuestionId
    value: OptionValue
    label: str
    position: int
    """1-based position in the question, as reported in result ``indices``."""
    description: str | None = None
    preview: str | None = None
    recommended: bool | None = None
    """Presentation marker only: it never changes what is sent, nor implies approval."""

    @classmethod
    def from_wire(cls, question_id: QuestionId, option: AskOption, position: int) -> OptionView:
        return cls(
            question_id=question_id,
            value=OptionValue(option.value),
            label=option.label,
            position=position,
            description=_opt(option.description),
            preview=_opt(option.preview),
            recommended=None if isinstance(option.recommended, UnsetType) else option.recommended,
        )


class QuestionView(msgspec.Struct, frozen=True):
    """One question of a started form.

    ``type`` is what the host validates answers against (``multi`` takes several values;
    ``single`` and ``preview`` at most one); ``requested_type`` is what the agent asked for.
    """

    id: QuestionId
    label: str
    prompt: str
    type: QuestionType
    requested_type: QuestionType
    required: bool
    options: tuple[OptionView, ...]

    @classmethod
    def from_wire(cls, question: AskQuestion) -> QuestionView:
        qid = QuestionId(question.id)
        return cls(
            id=qid,
            label=question.label,
            prompt=question.prompt,
            type=question.type,
            requested_type=question.requested,
            required=question.required,
            options=tuple(
                OptionView.from_wire(qid, option, position)
                for position, option in enumerate(question.options, start=1)
            ),
        )

    @property
    def multi(self) -> bool:
        """Whether several values may be selected (and combined with custom text)."""
        return self.type == "multi"

    @property
    def values(self) -> tuple[OptionValue, ...]:
        return tuple(option.value for option in self.options)

    @property
    def recommended(self) -> tuple[OptionView, ...]:
        """Options marked ``recommended: true`` (presentation only; never auto-selected)."""
        return tuple(option for option in self.options if option.recommended)

    def option(self, value: str) -> OptionView:
        """The option whose *value* is exactly ``value``; raises ``UnknownOption`` otherwise.

        A label never matches, even when no option has that value.
        """
        # A linear scan: forms have a handful of options, and no index keeps the view a plain,
        # cheap-to-create Struct.
        for option in self.options:
            if option.value == value:
                return option
        raise UnknownOption(self.id, value, self.values)

    def value(self, value: str) -> OptionValue:
        """``value`` checked against this question's option values, typed as an ``OptionValue``."""
        return self.option(value).value

    def has_value(self, value: str) -> bool:
        return any(option.value == value for option in self.options)


class FlowView(msgspec.Struct, frozen=True):
    """A started form, as a bridge sees it.

    ``replay`` is true when the transport announced a form that was already open when the
    client connected (not a fresh ``started`` event). ``created_at`` is epoch milliseconds.
    """

    flow_id: FlowId
    tool_call_id: str | None
    source: FlowSource
    title: str | None
    created_at: float
    questions: tuple[QuestionView, ...]
    replay: bool = False

    @classmethod
    def from_started(cls, event: StartedEvent, *, replay: bool = False) -> FlowView:
        return cls(
            flow_id=FlowId(event.flow_id),
            tool_call_id=_opt(event.tool_call_id),
            source=event.source,
            title=_opt(event.title),
            created_at=event.created_at,
            questions=tuple(QuestionView.from_wire(question) for question in event.questions),
            replay=replay,
        )

    @property
    def question_ids(self) -> tuple[QuestionId, ...]:
        return tuple(question.id for question in self.questions)

    def question(self, question_id: str) -> QuestionView:
        """The question with exactly this id; raises ``UnknownQuestion`` naming it otherwise."""
        for question in self.questions:
            if question.id == question_id:
                return question
        raise UnknownQuestion(self.flow_id, question_id, self.question_ids)

    def has_question(self, question_id: str) -> bool:
        return any(question.id == question_id for question in self.questions)

    def same_form(self, other: FlowView) -> bool:
        """Same flow and same form, ignoring ``created_at`` and ``replay``."""
        return (
            self.flow_id == other.flow_id
            and self.tool_call_id == other.tool_call_id
            and self.source == other.source
            and self.title == other.title
            and self.questions == other.questions
        )
