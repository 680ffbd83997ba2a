"""Responses built from a form's own objects: ``Answer`` (only via ``AnswerBuilder``) or ``Cancel``.

A bridge selects options by ``OptionView`` or by ``OptionValue`` taken from the started form; a
label is never matched, and neither a label nor a plain ``str`` type-checks as a value. The
builder runs the host's own per-question answer rules (``pi_ask_core.answers``: ``check_values``,
``check_custom_text``, ``check_selections``, ``check_option_notes``; spec §4.3) as each call is
made, in the host's order, against a lookup table built once per question, so a mistake raises
at the line that made it with the rule and message the host would give (``InvalidResponse``),
instead of coming back later as ``invalid_answer``. Arguments of the wrong type raise
``InvalidArgument`` naming the argument. The host stays authoritative.

``Answer`` cannot be constructed directly (a mypy ``abstract`` error and a ``TypeError``).
Cancel is its own type: an ``Answer`` can never mean cancel, and nothing here infers approval or
cancellation from labels or button names. Bridges with their own buttons declare an explicit
``ApprovalMapping`` (button -> an ``OptionValue`` of the form, or -> cancel) for each form.

Everything here is generic in the form's flow parameter ``F`` (see ``pi_ask_sdk.forms``): an
``AnswerBuilder[F]`` takes only ``QuestionView[F]`` / ``OptionValue[F]`` and builds an
``Answer[F]``. At run time every piece is checked to come from the builder's own flow
(``FlowMismatch`` otherwise), and ``check_pieces`` repeats that on a whole response before it
is sent (``msgspec.structs.replace`` can re-target a built answer; it cannot re-target the
pieces inside it).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from typing import Final, Generic, Literal, TypeAlias, final

import msgspec
from msgspec import UNSET
from msgspec.structs import replace
from typing_extensions import Self

from pi_ask_core import AnswerResponse, CancelResponse, RemoteAnswer
from pi_ask_core.answers import (
    AnswerProblem,
    check_custom_text,
    check_mode,
    check_option_notes,
    check_selections,
    check_values,
)
from pi_ask_core.js import is_blank
from pi_ask_core.protocol import ResultMode

from ._json import JsonObject
from .errors import (
    ApprovalMappingError,
    CustomTextProblem,
    FlowMismatch,
    InvalidArgument,
    InvalidCustomText,
    InvalidOptionNote,
    InvalidSelection,
    OptionNoteProblem,
    UnknownOption,
    UnknownQuestion,
)
from .forms import (
    F,
    FlowId,
    FlowView,
    OptionValue,
    OptionView,
    QuestionId,
    QuestionView,
    foreign_flow,
)

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
    "UncheckedAnswer",
    "check_pieces",
]


# ``gc=False``: immutable trees of strings and tuples, never part of a reference cycle.


@final
class QuestionAnswer(msgspec.Struct, Generic[F], frozen=True, gc=False):
    """The answer to one question. ``option_notes`` pairs are (option value, note)."""

    values: tuple[OptionValue[F], ...] = ()
    """The selected options' values, in the order selected."""
    custom_text: str | None = None
    """Free text given instead of (or, in a multi question, beside) the options."""
    note: str | None = None
    """A note on the question."""
    option_notes: tuple[tuple[OptionValue[F], str], ...] = ()
    """Notes on single options, as (option value, note) pairs."""

    def to_wire(self) -> RemoteAnswer:
        """The answer as the submit payload's wire Struct."""
        return RemoteAnswer(
            values=_plain(self.values) if self.values else UNSET,
            custom_text=UNSET if self.custom_text is None else self.custom_text,
            note=UNSET if self.note is None else self.note,
            option_notes=_plain_notes(self.option_notes) if self.option_notes else UNSET,
        )

    def to_builtins(self) -> JsonObject:
        """The answer as decoded JSON (what the host's checks take)."""
        return _builtins(self)


def _plain(values: tuple[OptionValue[F], ...]) -> list[str]:
    """The values as plain strings (an ``OptionValue`` carries its question id)."""
    return [str(value) for value in values]


def _plain_notes(notes: tuple[tuple[OptionValue[F], str], ...]) -> dict[str, str]:
    return {str(value): text for value, text in notes}


def _builtins(answer: QuestionAnswer[F]) -> JsonObject:
    """``QuestionAnswer.to_builtins``, in ``RemoteAnswer``'s field order."""
    entry: JsonObject = {}
    values = answer.values
    if values:
        entry["values"] = _plain(values)
    if answer.custom_text is not None:
        entry["customText"] = answer.custom_text
    if answer.note is not None:
        entry["note"] = answer.note
    notes = answer.option_notes
    if notes:
        entry["optionNotes"] = _plain_notes(notes)
    return entry


class Answer(msgspec.Struct, Generic[F], frozen=True, gc=False):
    """An answer for one flow, made only by ``AnswerBuilder.build()`` (so it was checked
    against the form). It replaces the host's whole answer set: questions not listed end up
    unanswered."""

    flow_id: FlowId
    """The flow the answer was built for."""
    answers: tuple[tuple[QuestionId[F], QuestionAnswer[F]], ...]
    """Each answered question's answer, in the order first answered."""
    mode: ResultMode = "submit"
    """``"submit"`` to answer, ``"elaborate"`` to ask the agent to clarify first."""
    kind: Literal["answer"] = "answer"
    """The tag that tells an ``Answer`` from a ``Cancel``."""

    def __post_init__(self) -> None:
        if type(self) is Answer:
            raise InvalidArgument(
                "Answer",
                "answers",
                "built by AnswerBuilder",
                self,
                message="Answer cannot be constructed directly; use AnswerBuilder(flow)",
            )

    @abc.abstractmethod
    def _built(self) -> None:
        """Marks ``Answer`` abstract for type checkers: only ``AnswerBuilder`` makes one."""

    def get(self, question_id: str) -> QuestionAnswer[F] | None:
        """The answer to the question with this id, or ``None`` when it is not answered."""
        return next((answer for qid, answer in self.answers if qid == question_id), None)

    def to_wire(self) -> AnswerResponse:
        """The ``response`` of the submit payload, as its wire Struct."""
        answers = {str(qid): answer.to_wire() for qid, answer in self.answers}
        return AnswerResponse(mode=self.mode, answers=answers)

    def to_builtins(self) -> JsonObject:
        """``msgspec.to_builtins(self.to_wire())``, built directly (what ``to_data`` writes; a
        test holds the two to the same result)."""
        answers = {str(qid): answer.to_builtins() for qid, answer in self.answers}
        return {"kind": "answer", "mode": self.mode, "answers": answers}

    def __repr__(self) -> str:
        return f"Answer(flow_id={self.flow_id!r}, answers={self.answers!r}, mode={self.mode!r})"


@final
class _BuiltAnswer(Answer[F], frozen=True):
    def _built(self) -> None:
        return None


@final
class Cancel(msgspec.Struct, Generic[F], frozen=True, gc=False):
    """An explicit cancel of one flow: the only way the SDK ever sends ``kind: "cancel"``.
    Made for a form with ``Cancel.of(flow)``."""

    flow_id: FlowId
    """The flow to cancel."""
    kind: Literal["cancel"] = "cancel"
    """The tag that tells a ``Cancel`` from an ``Answer``."""

    @classmethod
    def of(cls, flow: FlowView[F]) -> Cancel[F]:
        """The cancel of ``flow``'s form."""
        return Cancel(flow.flow_id)

    def to_wire(self) -> CancelResponse:
        """The ``response`` of the submit payload, as its wire Struct."""
        return CancelResponse()

    def to_builtins(self) -> JsonObject:
        """``msgspec.to_builtins(self.to_wire())``."""
        return {"kind": "cancel"}


Response: TypeAlias = Answer[F] | Cancel[F]
"""What ``BridgeClient.submit`` sends for a form ``FlowView[F]``; tagged by ``kind``."""


@final
class UncheckedAnswer(msgspec.Struct, Generic[F], frozen=True, gc=False):
    """An answer selecting *strings* verbatim, checked against nothing: made only by
    ``pi_ask_sdk.testing.unchecked_answer`` for tests that need the host to refuse something.

    Not an ``Answer`` (it cannot pass for one under mypy, nor in ``isinstance``); ``submit``
    and ``respond`` take it beside ``Response``, so a signature that accepts it says so.
    """

    flow_id: FlowId
    answers: tuple[tuple[str, tuple[str, ...]], ...]
    mode: ResultMode = "submit"
    kind: Literal["answer"] = "answer"

    def to_wire(self) -> AnswerResponse:
        """The ``response`` of the submit payload, as its wire Struct."""
        answers = {qid: RemoteAnswer(values=list(values)) for qid, values in self.answers}
        return AnswerResponse(mode=self.mode, answers=answers)

    def to_builtins(self) -> JsonObject:
        """``msgspec.to_builtins(self.to_wire())``."""
        answers = {qid: {"values": list(values)} for qid, values in self.answers}
        return {"kind": "answer", "mode": self.mode, "answers": answers}


def check_pieces(flow_id: FlowId, response: Answer[F] | Cancel[F]) -> None:
    """Raise ``FlowMismatch`` unless ``response`` and every piece of it (question ids, option
    values) were taken from the flow ``flow_id``; run on every submit before sending. Raises
    ``InvalidArgument`` for an answer holding what no builder makes (a plain ``str`` put in
    with ``msgspec.structs.replace``)."""
    if response.flow_id != flow_id:
        raise FlowMismatch(flow_id, response.flow_id, "response")
    if type(response) is Cancel:
        return
    for qid, entry in response.answers:
        if not isinstance(qid, QuestionId) or not isinstance(entry, QuestionAnswer):
            raise InvalidArgument("submit", "response", "an Answer built by AnswerBuilder", qid)
        other = foreign_flow(flow_id, qid)
        if other is not None:
            raise FlowMismatch(flow_id, other, "answer")
        for value in entry.values:
            _check_value(flow_id, qid, value)
        for value, _ in entry.option_notes:
            _check_value(flow_id, qid, value)


def _check_value(flow_id: FlowId, qid: QuestionId[F], value: object) -> None:
    """Raise unless ``value`` is an option value of the question ``qid`` of flow ``flow_id``."""
    if not isinstance(value, OptionValue):
        raise InvalidArgument("submit", "response", "an Answer built by AnswerBuilder", value)
    owner = value.question_id
    if owner is not qid:
        other = foreign_flow(flow_id, owner)
        if other is not None:
            raise FlowMismatch(flow_id, other, "option value")
        if owner != qid:
            raise UnknownOption(qid, f"{value} (an option of question {owner})", ())


def _select_problem(qid: QuestionId[F], problem: AnswerProblem) -> InvalidSelection:
    rule = problem.rule
    if rule == "duplicate_value" or rule == "too_many_values":
        return InvalidSelection(qid, rule, problem.message)
    if rule == "value_with_custom_text" or rule == "unknown_value":
        return InvalidSelection(qid, rule, problem.message)
    raise AssertionError(f"select() cannot break rule {rule}")  # pragma: no cover


def _custom_text_problem(qid: QuestionId[F], problem: AnswerProblem) -> InvalidCustomText:
    rule: CustomTextProblem = "value_with_custom_text"
    assert problem.rule == rule, problem.rule
    return InvalidCustomText(qid, rule, problem.message)


def _option_note_problem(qid: QuestionId[F], problem: AnswerProblem) -> InvalidOptionNote:
    rule: OptionNoteProblem = "unknown_option_note"
    assert problem.rule == rule, problem.rule
    return InvalidOptionNote(qid, rule, problem.message)


_SUBMIT: Final = "submit"


class AnswerBuilder(Generic[F]):
    """Builds an ``Answer`` for one form, checking each call against that form.

    Every method returns the builder, so calls chain; ``build()`` returns an immutable
    ``Answer`` and may be called again after further changes. A call that raises leaves the
    builder as it was. A question, option or value taken from another flow raises
    ``FlowMismatch`` (and, in a handler generic in ``F``, is a mypy error).

    Args:
        flow: The form to answer.
        mode: ``"submit"`` (the default) or ``"elaborate"``.

    Raises:
        InvalidArgument: ``flow`` is not a ``FlowView``, or ``mode`` is neither mode.
    """

    __slots__ = ("_answers", "_flow", "_mode")

    def __init__(self, flow: FlowView[F], *, mode: ResultMode = _SUBMIT) -> None:
        if not isinstance(flow, FlowView):
            raise InvalidArgument("AnswerBuilder", "flow", "a FlowView", flow)
        self._flow = flow
        # The default needs no check (it is this module's own constant).
        self._mode: ResultMode = (
            _SUBMIT if mode is _SUBMIT else self._checked_mode("AnswerBuilder", mode)
        )
        # Each question's answer so far, immutable and replaced by each call that changes it:
        # ``build()`` then copies them as they are, and a call that raises changes nothing.
        self._answers: dict[QuestionId[F], QuestionAnswer[F]] = {}

    @property
    def flow(self) -> FlowView[F]:
        """The form this builder answers."""
        return self._flow

    # --- argument checks (what mypy cannot enforce at run time) ---

    @staticmethod
    def _checked_mode(method: str, mode: object) -> ResultMode:
        checked = check_mode(mode) if isinstance(mode, str) else None
        if checked is None or isinstance(checked, AnswerProblem):
            raise InvalidArgument(method, "mode", '"submit" or "elaborate"', mode)
        return checked

    @staticmethod
    def _checked_text(method: str, argument: str, text: object) -> str:
        if not isinstance(text, str):
            raise InvalidArgument(method, argument, "a str", text)
        return text

    def _question(self, method: str, question: QuestionView[F] | QuestionId[F]) -> QuestionView[F]:
        flow = self._flow
        for found in flow.questions:  # the common case: one of this form's own views
            if found is question:
                return found
        if isinstance(question, QuestionView):
            other = foreign_flow(flow.flow_id, question.id)
            if other is not None:
                raise FlowMismatch(flow.flow_id, other, "question")
            found = flow.question(question.id)  # raises UnknownQuestion
            if found is not question and found != question:
                raise UnknownQuestion(
                    flow.flow_id, f"{question.id} (from another form)", flow.question_ids
                )
            return found
        if isinstance(question, QuestionId):
            return flow.question(question)  # raises FlowMismatch, UnknownQuestion
        raise InvalidArgument(
            method, "question", "a QuestionView or a QuestionId from the form", question
        )

    @staticmethod
    def _value(
        method: str, argument: str, view: QuestionView[F], option: OptionView[F] | OptionValue[F]
    ) -> OptionValue[F]:
        if isinstance(option, OptionValue):
            value = option
        elif isinstance(option, OptionView):
            value = option.value
        else:
            raise InvalidArgument(
                method, argument, "an OptionView or OptionValue taken from the form", option
            )
        qid = value.question_id
        if qid is not view.id:
            other = foreign_flow(view.id.flow_id, qid)
            if other is not None:
                raise FlowMismatch(view.id.flow_id, other, "option value")
            if qid != view.id:
                raise UnknownOption(view.id, f"{value} (an option of question {qid})", view.values)
        return value

    # --- the host's checks ---
    #
    # A kept answer always passes every rule, so a call runs the host's rules that involve what
    # it changes (pi_ask_core.answers), in the host's order. The JSON-type rules cannot fail
    # (arguments are typed and checked). A call that raises changes nothing.

    # --- building ---

    def select(
        self, question: QuestionView[F] | QuestionId[F], *options: OptionView[F] | OptionValue[F]
    ) -> Self:
        """Select these options of ``question`` (replacing an earlier selection), in this order.

        Raises ``UnknownQuestion`` for a question not in the form, ``UnknownOption`` for an
        option of another question, ``FlowMismatch`` for one of another flow, and
        ``InvalidSelection`` with the host's rule (in its order: ``duplicate_value``,
        ``too_many_values``, ``value_with_custom_text``, ``unknown_value``).

        Args:
            question: The question (its view, or its id taken from the form).
            *options: The options to select (views or values taken from ``question``); none
                clears the selection.

        Raises:
            UnknownQuestion: ``question`` is not a question of the form.
            FlowMismatch: ``question`` was taken from another flow.
            InvalidArgument: ``question`` is neither a ``QuestionView`` nor a ``QuestionId``.
            UnknownOption: An option is not one of ``question``'s.
            InvalidSelection: The host would refuse the selection (``problem`` names the rule).
        """
        view = self._question("select", question)
        values = tuple([self._value("select", "options", view, option) for option in options])
        before = self._answers.get(view.id)
        if values:
            index = view.rules
            problem = check_values(index.id, values, index)
            if problem is None and before is not None:
                problem = check_custom_text(index.id, before.custom_text, True, index)
            if problem is None:
                selections = check_selections(index.id, values, index)
                problem = selections if type(selections) is AnswerProblem else None
            if problem is not None:
                raise _select_problem(view.id, problem)
        self._answers[view.id] = (
            QuestionAnswer(values) if before is None else replace(before, values=values)
        )
        return self

    def custom_text(self, question: QuestionView[F] | QuestionId[F], text: str) -> Self:
        """Answer with free text. Blank text is ignored by the host (and dropped here).

        Args:
            question: The question (its view, or its id taken from the form).
            text: The text; it replaces earlier custom text.

        Raises:
            UnknownQuestion: ``question`` is not a question of the form.
            FlowMismatch: ``question`` was taken from another flow.
            InvalidArgument: ``question`` is neither a ``QuestionView`` nor a ``QuestionId``.
            InvalidCustomText: A value is selected and the question is not multi.
        """
        view = self._question("custom_text", question)
        text = self._checked_text("custom_text", "text", text)
        custom = None if is_blank(text) else text
        before = self._answers.get(view.id)
        if before is None:
            self._answers[view.id] = QuestionAnswer(custom_text=custom)
            return self
        if custom is not None:
            index = view.rules
            problem = check_custom_text(index.id, custom, bool(before.values), index)
            if problem is not None:
                raise _custom_text_problem(view.id, problem)
        self._answers[view.id] = replace(before, custom_text=custom)
        return self

    def note(self, question: QuestionView[F] | QuestionId[F], text: str) -> Self:
        """A note on the question (clarification context; in ``elaborate`` mode, a request).

        Args:
            question: The question (its view, or its id taken from the form).
            text: The note; it replaces an earlier one, and blank text removes it.

        Raises:
            UnknownQuestion: ``question`` is not a question of the form.
            FlowMismatch: ``question`` was taken from another flow.
            InvalidArgument: ``question`` is neither a ``QuestionView`` nor a ``QuestionId``.
        """
        view = self._question("note", question)
        text = self._checked_text("note", "text", text)
        note = None if is_blank(text) else text
        before = self._answers.get(view.id)
        self._answers[view.id] = (
            QuestionAnswer(note=note) if before is None else replace(before, note=note)
        )
        return self

    def option_note(
        self,
        question: QuestionView[F] | QuestionId[F],
        option: OptionView[F] | OptionValue[F],
        text: str,
    ) -> Self:
        """A note on one real option of the question, selected or not.

        Args:
            question: The question (its view, or its id taken from the form).
            option: The option (its view or value, taken from ``question``).
            text: The note; it replaces the option's earlier one, and blank text removes it.

        Raises:
            UnknownQuestion: ``question`` is not a question of the form.
            FlowMismatch: ``question`` was taken from another flow.
            InvalidArgument: ``question`` is neither a ``QuestionView`` nor a ``QuestionId``.
            UnknownOption: ``option`` is not one of ``question``'s.
            InvalidOptionNote: The host would refuse the note (``problem`` names the rule).
        """
        view = self._question("option_note", question)
        value = self._value("option_note", "option", view, option)
        text = self._checked_text("option_note", "text", text)
        index = view.rules
        kept = check_option_notes(index.id, {value: text}, index)  # {} for a blank note
        if type(kept) is AnswerProblem:
            raise _option_note_problem(view.id, kept)
        qid, answers = view.id, self._answers
        before = answers.get(qid)
        # A note replaces the value's earlier one in its place (the notes are a dict's items);
        # a blank one removes it.
        notes = {} if before is None else dict(before.option_notes)
        if kept:
            notes[value] = text
        elif notes.pop(value, None) is None:
            return self  # a blank note where there was none: nothing changes
        changed = tuple(notes.items())
        answers[qid] = (
            QuestionAnswer(option_notes=changed)
            if before is None
            else replace(before, option_notes=changed)
        )
        return self

    def mode(self, mode: ResultMode) -> Self:
        """``submit`` (the default) or ``elaborate`` (ask the agent to clarify first).

        Raises:
            InvalidArgument: ``mode`` is neither.
        """
        self._mode = self._checked_mode("mode", mode)
        return self

    def build(self) -> Answer[F]:
        """The answer so far, as an immutable ``Answer`` (the builder can go on changing)."""
        return _BuiltAnswer(self._flow.flow_id, tuple(self._answers.items()), self._mode)


# --- explicit approval mappings -----------------------------------------------------------------


@final
class SelectOption(Generic[F]):
    """A button that selects one option *value* (never a label) of one question.

    ``SelectOption(deploy.value("yes"))``: the value comes from a started form and knows its
    question and flow. Read-only; matchable as ``SelectOption(question_id=..., value=...)``.

    Args:
        value: The option value, taken from a started form.

    Raises:
        InvalidArgument: ``value`` is not an ``OptionValue`` (a plain string, a label).
    """

    __slots__ = ("_value",)
    __match_args__ = ("question_id", "value")

    def __init__(self, value: OptionValue[F]) -> None:
        if not isinstance(value, OptionValue):
            raise InvalidArgument(
                "SelectOption", "value", "an OptionValue taken from a form", value
            )
        self._value = value

    @property
    def question_id(self) -> QuestionId[F]:
        """The question the value belongs to."""
        return self._value.question_id

    @property
    def value(self) -> OptionValue[F]:
        """The option value the button selects."""
        return self._value

    @property
    def kind(self) -> Literal["select"]:
        """Always ``"select"`` (a ``CancelFlow``'s is ``"cancel"``)."""
        return "select"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SelectOption):
            return NotImplemented
        return (self.question_id, self._value) == (other.question_id, other._value)

    def __hash__(self) -> int:
        return hash((self.question_id, str(self._value)))

    def __repr__(self) -> str:
        return f"SelectOption(question_id={str(self.question_id)!r}, value={str(self._value)!r})"


@final
class CancelFlow(msgspec.Struct, frozen=True):
    """A button that explicitly cancels the flow."""

    kind: Literal["cancel"] = "cancel"


ButtonAction: TypeAlias = SelectOption[F] | CancelFlow
"""What a button of a bridge's UI does: select one option of the form (by its value), or
cancel the flow explicitly. Never inferred from the button's label."""


class ApprovalMapping(Generic[F]):
    """An explicit, read-only mapping from a bridge's own buttons to one form's values.

    Values come from a started form, so a mapping is declared for that form, and checked
    against it when made:

        deploy = flow.question("deploy")
        buttons = ApprovalMapping(flow, {"Approve": SelectOption(deploy.value("yes")),
                                         "Reject": SelectOption(deploy.value("no")),
                                         "Dismiss": CancelFlow()})
        response = buttons.response("Approve")

    A value of another flow raises ``FlowMismatch`` naming both flows (and, in a handler
    generic in ``F``, is a mypy error), a question or value the form does not have
    ``ApprovalMappingError`` naming the button; there is no fallback to labels. ``bind(view)``
    checks it again against another view of the same flow (e.g. re-announced).

    Args:
        flow: The form the buttons answer.
        buttons: Each button's name and what it does.

    Raises:
        FlowMismatch: A value was taken from another flow.
        ApprovalMappingError: A button's question or value is not in the form.
        InvalidArgument: ``flow`` is not a ``FlowView``, or an action is neither a
            ``SelectOption`` nor a ``CancelFlow``.
    """

    __slots__ = ("_buttons", "_flow")

    def __init__(self, flow: FlowView[F], buttons: Mapping[str, ButtonAction[F]]) -> None:
        if not isinstance(flow, FlowView):
            raise InvalidArgument("ApprovalMapping", "flow", "a FlowView", flow)
        for button, action in buttons.items():
            if not isinstance(action, (SelectOption, CancelFlow)):
                raise InvalidArgument(
                    "ApprovalMapping",
                    f"buttons[{button!r}]",
                    "a SelectOption or CancelFlow",
                    action,
                )
        self._flow = flow
        self._buttons: dict[str, ButtonAction[F]] = dict(buttons)
        self._check()

    def _check(self) -> None:
        """Raise on the first button that does not fit the form."""
        flow = self._flow
        for button, action in self._buttons.items():
            if isinstance(action, CancelFlow):
                continue
            other = foreign_flow(flow.flow_id, action.question_id)
            if other is not None:
                raise FlowMismatch(flow.flow_id, other, "approval mapping")
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

    @property
    def flow(self) -> FlowView[F]:
        """The form the mapping was checked against."""
        return self._flow

    @property
    def buttons(self) -> tuple[str, ...]:
        """The buttons' names, in the order given."""
        return tuple(self._buttons)

    def __iter__(self) -> Iterator[tuple[str, ButtonAction[F]]]:
        return iter(tuple(self._buttons.items()))

    def bind(self, flow: FlowView[F]) -> ApprovalMapping[F]:
        """This mapping checked against ``flow``, another view of the same flow (a replayed
        or re-announced form).

        Raises:
            FlowMismatch: ``flow`` is another flow.
            ApprovalMappingError: A button's question or value is not in ``flow``'s form.
        """
        return ApprovalMapping(flow, self._buttons)

    def action(self, button: str) -> ButtonAction[F]:
        """What ``button`` does.

        Raises:
            ApprovalMappingError: No button has that name (``unknown_button``).
        """
        found = self._buttons.get(button)
        if found is None:
            raise ApprovalMappingError(
                "unknown_button", button=button, flow_id=self._flow.flow_id, known=self._buttons
            )
        return found

    def response(self, button: str) -> Response[F]:
        """The response for a press of ``button``: only its question is answered.

        Raises:
            ApprovalMappingError: No button has that name (``unknown_button``).
        """
        action = self.action(button)
        if isinstance(action, CancelFlow):
            return Cancel.of(self._flow)
        question = self._flow.question(action.question_id)
        return AnswerBuilder(self._flow).select(question, question.value(action.value)).build()


BoundApproval: TypeAlias = ApprovalMapping[F]
"""The name ``ApprovalMapping.bind`` returned before a mapping was declared for its form (a
mapping is now always bound): kept for annotations."""
