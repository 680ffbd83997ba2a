"""Responses built from a form's own objects: ``Answer`` (via ``AnswerBuilder``) or ``Cancel``.

A bridge selects options by ``OptionView`` or by ``OptionValue`` found in the started form; a
label is never matched. The builder applies the host's answer rules (spec §4.3) as each call is
made, so a mistake raises at the line that made it, naming the question and value, instead of
coming back later as ``invalid_answer``. The host stays authoritative.

Cancel is its own type: an ``Answer`` can never mean cancel, and nothing here infers approval or
cancellation from labels or button names. Bridges with their own buttons declare an explicit
``ApprovalMapping`` (button -> question id + option value, or -> cancel), checked against each
form when bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal, TypeAlias, final

import msgspec
from msgspec import UNSET
from typing_extensions import Self

from pi_ask_core import AnswerResponse, CancelResponse, RemoteAnswer, ResultMode
from pi_ask_core.js import is_blank

from .errors import ApprovalMappingError, InvalidResponse, UnknownOption, UnknownQuestion
from .forms import FlowId, FlowView, OptionValue, OptionView, QuestionId, QuestionView

__all__ = [
    "Answer",
    "AnswerBuilder",
    "ApprovalMapping",
    "BoundApproval",
    "ButtonAction",
    "Cancel",
    "CancelFlow",
    "QuestionAnswer",
    "Response",
    "SelectOption",
]


@final
class QuestionAnswer(msgspec.Struct, frozen=True):
    """The answer to one question. ``option_notes`` pairs are (option value, note)."""

    values: tuple[OptionValue, ...] = ()
    custom_text: str | None = None
    note: str | None = None
    option_notes: tuple[tuple[OptionValue, str], ...] = ()

    def to_wire(self) -> RemoteAnswer:
        return RemoteAnswer(
            values=list(self.values) if self.values else UNSET,
            custom_text=UNSET if self.custom_text is None else self.custom_text,
            note=UNSET if self.note is None else self.note,
            option_notes=dict(self.option_notes) if self.option_notes else UNSET,
        )


@final
class Answer(msgspec.Struct, frozen=True):
    """An answer for one flow. It replaces the host's whole answer set: questions not listed
    end up unanswered. Build it with ``AnswerBuilder`` so it is checked against the form."""

    flow_id: FlowId
    answers: tuple[tuple[QuestionId, QuestionAnswer], ...]
    mode: ResultMode = "submit"
    kind: Literal["answer"] = "answer"

    def get(self, question_id: str) -> QuestionAnswer | None:
        return next((answer for qid, answer in self.answers if qid == question_id), None)

    def to_wire(self) -> AnswerResponse:
        return AnswerResponse(
            mode=self.mode, answers={qid: answer.to_wire() for qid, answer in self.answers}
        )


@final
class Cancel(msgspec.Struct, frozen=True):
    """An explicit cancel of one flow: the only way the SDK ever sends ``kind: "cancel"``."""

    flow_id: FlowId
    kind: Literal["cancel"] = "cancel"

    @classmethod
    def of(cls, flow: FlowView) -> Cancel:
        return cls(flow.flow_id)

    def to_wire(self) -> CancelResponse:
        return CancelResponse()


Response: TypeAlias = Answer | Cancel
"""What ``BridgeClient.submit`` sends; tagged by ``kind``."""


class _Draft:
    __slots__ = ("custom_text", "note", "option_notes", "values")

    def __init__(self) -> None:
        self.values: tuple[OptionValue, ...] = ()
        self.custom_text: str | None = None
        self.note: str | None = None
        self.option_notes: dict[OptionValue, str] = {}

    def freeze(self) -> QuestionAnswer:
        return QuestionAnswer(
            self.values, self.custom_text, self.note, tuple(self.option_notes.items())
        )


class AnswerBuilder:
    """Builds an ``Answer`` for one form, checking each call against that form.

    Every method returns the builder, so calls chain; ``build()`` returns an immutable
    ``Answer`` and may be called again after further changes.
    """

    __slots__ = ("_drafts", "_flow", "_mode")

    def __init__(self, flow: FlowView, *, mode: ResultMode = "submit") -> None:
        self._flow = flow
        self._mode: ResultMode = mode
        self._drafts: dict[QuestionId, _Draft] = {}

    @property
    def flow(self) -> FlowView:
        return self._flow

    def _question(self, question: QuestionView | QuestionId) -> QuestionView:
        qid = question.id if isinstance(question, QuestionView) else question
        found = self._flow.question(qid)
        if isinstance(question, QuestionView) and question != found:
            raise UnknownQuestion(
                self._flow.flow_id, f"{qid} (from another form)", self._flow.question_ids
            )
        return found

    def _draft(self, question: QuestionView) -> _Draft:
        draft = self._drafts.get(question.id)
        if draft is None:
            draft = self._drafts[question.id] = _Draft()
        return draft

    @staticmethod
    def _option(question: QuestionView, option: OptionView | OptionValue) -> OptionValue:
        if isinstance(option, OptionView):
            found = question.option(option.value)
            if found != option:
                raise UnknownOption(question.id, f"{option.value} (from another question)", ())
            return found.value
        return question.value(option)

    def select(
        self, question: QuestionView | QuestionId, *options: OptionView | OptionValue
    ) -> Self:
        """Select these options of ``question`` (replacing an earlier selection), in this order.

        Raises ``UnknownQuestion`` / ``UnknownOption`` for ids or values not in the form, and
        ``InvalidResponse`` for a duplicate value, several values on a question that is not
        ``multi``, or a value next to custom text on a question that is not ``multi``.
        """
        view = self._question(question)
        values = tuple(self._option(view, option) for option in options)
        seen: set[str] = set()
        for value in values:
            if value in seen:
                raise InvalidResponse(
                    view.id, "duplicate_value", f'option value "{value}" is selected twice.'
                )
            seen.add(value)
        if len(values) > 1 and not view.multi:
            raise InvalidResponse(
                view.id,
                "too_many_values",
                f"a {view.type} question takes one value, got {len(values)}.",
            )
        draft = self._draft(view)
        if values and not view.multi and draft.custom_text is not None:
            self._refuse_combination(view)
        draft.values = values
        return self

    def custom_text(self, question: QuestionView | QuestionId, text: str) -> Self:
        """Answer with free text. Blank text is ignored by the host (and dropped here)."""
        view = self._question(question)
        draft = self._draft(view)
        kept = None if is_blank(text) else text
        if kept is not None and draft.values and not view.multi:
            self._refuse_combination(view)
        draft.custom_text = kept
        return self

    def note(self, question: QuestionView | QuestionId, text: str) -> Self:
        """A note on the question (clarification context; in ``elaborate`` mode, a request)."""
        self._draft(self._question(question)).note = None if is_blank(text) else text
        return self

    def option_note(
        self, question: QuestionView | QuestionId, option: OptionView | OptionValue, text: str
    ) -> Self:
        """A note on one real option of the question, selected or not."""
        view = self._question(question)
        value = self._option(view, option)
        draft = self._draft(view)
        if is_blank(text):
            draft.option_notes.pop(value, None)
        else:
            draft.option_notes[value] = text
        return self

    def mode(self, mode: ResultMode) -> Self:
        """``submit`` (the default) or ``elaborate`` (ask the agent to clarify first)."""
        self._mode = mode
        return self

    def build(self) -> Answer:
        return Answer(
            flow_id=self._flow.flow_id,
            answers=tuple((qid, draft.freeze()) for qid, draft in self._drafts.items()),
            mode=self._mode,
        )

    @staticmethod
    def _refuse_combination(view: QuestionView) -> None:
        raise InvalidResponse(
            view.id,
            "value_with_custom_text",
            f"a {view.type} question cannot combine a selected value with custom text.",
        )


# --- explicit approval mappings -----------------------------------------------------------------


@final
class SelectOption(msgspec.Struct, frozen=True):
    """A button that selects one option *value* (never a label) of one question."""

    question_id: str
    value: str
    kind: Literal["select"] = "select"


@final
class CancelFlow(msgspec.Struct, frozen=True):
    """A button that explicitly cancels the flow."""

    kind: Literal["cancel"] = "cancel"


ButtonAction: TypeAlias = SelectOption | CancelFlow


class ApprovalMapping:
    """An explicit mapping from a bridge's own buttons to form values.

    ``ApprovalMapping({"Approve": SelectOption("deploy", "yes"),
    "Reject": SelectOption("deploy", "no"), "Dismiss": CancelFlow()})``.
    ``bind(flow)`` checks every button against that form and raises ``ApprovalMappingError``
    naming the button, question and value that do not fit; there is no fallback to labels.
    """

    __slots__ = ("_buttons",)

    def __init__(self, buttons: Mapping[str, ButtonAction]) -> None:
        for button, action in buttons.items():
            if not isinstance(action, (SelectOption, CancelFlow)):
                raise TypeError(
                    f"Button {button!r} must map to SelectOption or CancelFlow, "
                    f"not {type(action).__name__}."
                )
        self._buttons: dict[str, ButtonAction] = dict(buttons)

    @property
    def buttons(self) -> tuple[str, ...]:
        return tuple(self._buttons)

    def __iter__(self) -> Iterator[tuple[str, ButtonAction]]:
        return iter(self._buttons.items())

    def bind(self, flow: FlowView) -> BoundApproval:
        """Check every button against ``flow``; raises on the first that does not fit."""
        for button, action in self._buttons.items():
            if isinstance(action, CancelFlow):
                continue
            if not flow.has_question(action.question_id):
                raise ApprovalMappingError(
                    "question_not_in_form",
                    button=button,
                    flow_id=flow.flow_id,
                    question_id=action.question_id,
                    value=action.value,
                    known=flow.question_ids,
                )
            question = flow.question(action.question_id)
            if not question.has_value(action.value):
                raise ApprovalMappingError(
                    "value_not_in_question",
                    button=button,
                    flow_id=flow.flow_id,
                    question_id=action.question_id,
                    value=action.value,
                    known=question.values,
                )
        return BoundApproval(flow, dict(self._buttons))


class BoundApproval:
    """An ``ApprovalMapping`` checked against one form; turns a button press into a response."""

    __slots__ = ("_buttons", "flow")

    def __init__(self, flow: FlowView, buttons: dict[str, ButtonAction]) -> None:
        self.flow = flow
        self._buttons = buttons

    @property
    def buttons(self) -> tuple[str, ...]:
        return tuple(self._buttons)

    def action(self, button: str) -> ButtonAction:
        found = self._buttons.get(button)
        if found is None:
            raise ApprovalMappingError(
                "unknown_button", button=button, flow_id=self.flow.flow_id, known=self._buttons
            )
        return found

    def response(self, button: str) -> Response:
        """The response for a press of ``button``: only its question is answered."""
        action = self.action(button)
        if isinstance(action, CancelFlow):
            return Cancel.of(self.flow)
        question = self.flow.question(action.question_id)
        return AnswerBuilder(self.flow).select(question, question.value(action.value)).build()
