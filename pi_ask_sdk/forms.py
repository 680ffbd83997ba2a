"""Typed, read-only views of a started form: ``FlowView`` / ``QuestionView`` / ``OptionView``.

What a bridge may send and what it may only show have different types:

* ``OptionValue`` and ``QuestionId`` are ``str`` at run time, but neither can be constructed by
  a bridge (``OptionValue("yes")`` is a mypy ``abstract`` error and a ``TypeError``): they come
  only from a started form's views (``question.value("no")``, ``option.value``,
  ``question.id``). A response builder accepts nothing else, so a label or any other string
  never reaches the host as a value.
* Labels, prompts, titles, descriptions, previews and the ``badge`` are ``DisplayText``, which
  is not a ``str`` and cannot be constructed by a bridge: ``label == "Yes"`` is a mypy
  ``comparison-overlap`` error, ``DisplayText("Yes")`` a mypy ``abstract`` error (and a
  ``TypeError``), and a label cannot be passed where a value or id is wanted. Render it with an
  f-string, ``str()`` or ``.render()``. Nothing a builder accepts can be obtained from one.
* Every piece of a form knows its flow: a ``QuestionId`` its ``flow_id``, an ``OptionValue`` its
  question (``question_id.flow_id``). The views, values, ids and what is built from them are
  generic in a *flow parameter* ``F`` (``FlowView[F]``, ``OptionValue[F]``, ``Answer[F]``...):
  a handler written generic in ``F`` cannot mix two forms under mypy, and at run time a piece
  of another flow is refused with ``FlowMismatch`` (naming both flows) before anything is sent.
  Unparameterised, ``FlowView`` means ``FlowView[AnyFlow]`` (what a client hands out).

Lookups are by exact value/id; labels never match.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Final, Generic, NewType, final

import msgspec
from msgspec import UNSET, UnsetType
from typing_extensions import TypeVar

from pi_ask_core import StartedEvent
from pi_ask_core.answers import QuestionIndex
from pi_ask_core.protocol import AskOption, AskQuestion, FlowSource, QuestionType

from .errors import FlowMismatch, InvalidArgument, UnknownOption, UnknownQuestion

__all__ = [
    "AnyFlow",
    "DisplayText",
    "FlowId",
    "FlowView",
    "OptionValue",
    "OptionView",
    "QuestionId",
    "QuestionView",
    "display_text",
    "foreign_flow",
]

FlowId = NewType("FlowId", str)
"""The ``flowId`` of a started event; what a submit is addressed to (checked against the
``FlowView`` a response was built from, so a made-up one is refused before sending)."""


@final
class AnyFlow:
    """The flow parameter of the views a client hands out: *some* started flow.

    ``FlowView`` unparameterised is ``FlowView[AnyFlow]``. Write a per-flow handler generic in
    its own parameter (``F = TypeVar("F")``, ``def answer(flow: FlowView[F]) -> Answer[F]``) and
    mypy keeps every piece it uses with that one form. Never instantiated.
    """

    def __init__(self) -> None:
        raise InvalidArgument(
            "AnyFlow",
            "self",
            "a type parameter",
            self,
            message="AnyFlow is a type parameter, never a value",
        )


F = TypeVar("F", default=AnyFlow)


class QuestionId(str, Generic[F]):
    """A question ``id`` of a started form (the keys of an answer); a ``str`` at run time.

    Obtained only from a form (``question.id``); ``QuestionId("deploy")`` is a type error.
    ``flow_id`` is the flow it was taken from (a builder of another flow refuses it).
    """

    __slots__ = ()

    if not TYPE_CHECKING:  # (type checkers see an abstract class: constructing it is an error)

        def __new__(cls, *args: object, **kwargs: object) -> str:
            if cls is QuestionId:
                raise InvalidArgument(
                    "QuestionId",
                    "value",
                    "taken from a form",
                    args[0] if args else None,
                    message="QuestionId cannot be constructed; take it from a QuestionView (.id)",
                )
            return super().__new__(cls, *args, **kwargs)

    def __init_subclass__(cls) -> None:
        if cls.__module__ != __name__:
            raise InvalidArgument(
                "class", "bases", "not QuestionId", cls, message="QuestionId cannot be subclassed"
            )

    @property
    @abc.abstractmethod
    def flow_id(self) -> FlowId:
        """The flow this id was taken from."""


@final
class _QuestionId(QuestionId[F]):
    # The flow id in a slot (as _OptionValue keeps its question): made by _question_id.
    __slots__ = ("_flow_id",)
    _flow_id: FlowId

    @property
    def flow_id(self) -> FlowId:
        return self._flow_id

    def __repr__(self) -> str:
        return f"QuestionId({str(self)!r}, flow_id={self._flow_id!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_question_id, (str(self), self._flow_id))


class OptionValue(str, Generic[F]):
    """An option ``value`` of a started form: the only thing a bridge may send to select it.

    A ``str`` at run time (compare it, log it, use it as a key), but obtained only from a form
    (``question.value("no")``, ``option.value``, ``question.values``): ``OptionValue("x")`` is a
    type error (and a ``TypeError``). ``question_id`` is the question it belongs to (and
    ``question_id.flow_id`` its flow).
    """

    __slots__ = ()

    if not TYPE_CHECKING:  # (type checkers see an abstract class: constructing it is an error)

        def __new__(cls, *args: object, **kwargs: object) -> str:
            if cls is OptionValue:
                raise InvalidArgument(
                    "OptionValue",
                    "value",
                    "taken from a form",
                    args[0] if args else None,
                    message="OptionValue cannot be constructed; take it from a QuestionView"
                    ' (question.value("..."), option.value)',
                )
            return super().__new__(cls, *args, **kwargs)

    def __init_subclass__(cls) -> None:
        if cls.__module__ != __name__:
            raise InvalidArgument(
                "class", "bases", "not OptionValue", cls, message="OptionValue cannot be subclassed"
            )

    @property
    @abc.abstractmethod
    def question_id(self) -> QuestionId[F]:
        """The question this value belongs to."""


@final
class _OptionValue(OptionValue[F]):
    # The question id in a slot, not an instance __dict__: a view makes a value per lookup, and
    # a value is a str with one label, which needs no dict of its own. Made by _option_value.
    __slots__ = ("_question_id",)
    _question_id: QuestionId[F]

    @property
    def question_id(self) -> QuestionId[F]:
        return self._question_id

    def __repr__(self) -> str:
        return f"OptionValue({str(self)!r}, question_id={str(self._question_id)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_option_value, (str(self), self._question_id))


# The keys of what a QuestionView makes on first use and keeps in its __dict__.
_RULES: Final = "_rules"
_OPTIONS: Final = "_options"


# Ids and values are made with ``str.__new__`` itself: the public classes' refusing ``__new__``
# is for callers, and the SDK's own ids and values come from a form (nothing to refuse), on the
# path of every round trip (bench/README.md).


def _question_id(text: str, flow_id: FlowId) -> _QuestionId[F]:
    """The question id ``text`` of the flow ``flow_id``."""
    question_id: _QuestionId[F] = str.__new__(_QuestionId, text)
    question_id._flow_id = flow_id
    return question_id


def _option_value(text: str, question_id: QuestionId[F]) -> _OptionValue[F]:
    """The value ``text`` of the question ``question_id``."""
    value: _OptionValue[F] = str.__new__(_OptionValue, text)
    value._question_id = question_id
    return value


def foreign_flow(flow_id: FlowId, question_id: object) -> FlowId | None:
    """The flow ``question_id`` (a ``QuestionId``, or anything else: then ``None``) was taken
    from when it is not ``flow_id``, else ``None``: how a builder of one flow tells a piece of
    another flow's form (``FlowMismatch``)."""
    other: FlowId | None = getattr(question_id, "_flow_id", None)
    return None if other is None or other == flow_id else other


# The views, responses and events below are ``gc=False``: immutable trees of strings, tuples and
# one another, they can never be part of a reference cycle, and a bridge makes dozens per form.


class DisplayText(msgspec.Struct, frozen=True, gc=False):
    """Text for display only (a label, prompt, title, description, preview or badge).

    Not a ``str`` and made only by the SDK (``DisplayText("Yes")`` is a mypy ``abstract`` error
    and a ``TypeError``), so under mypy ``--strict`` it can never be compared with a string
    (``comparison-overlap``) or passed as a value. Display it with an f-string, ``str()`` or
    ``render()``; two display texts compare equal when their text is. Choosing goes through
    option values only (``question.value("yes")``), never through what is shown.
    """

    _text: str

    def __post_init__(self) -> None:
        if type(self) is DisplayText:
            raise InvalidArgument(
                "DisplayText",
                "text",
                "taken from a form",
                self._text,
                message="DisplayText cannot be constructed: it is the text a form shows; choose "
                'by option value (question.value("..."))',
            )

    @abc.abstractmethod
    def _from_form(self) -> None:
        """Marks the type abstract for type checkers: only this module makes instances."""

    def render(self) -> str:
        """The text, for display (an HTML page, a terminal, a chat message)."""
        return self._text

    def __str__(self) -> str:
        return self._text

    def __format__(self, spec: str) -> str:
        return format(self._text, spec)

    def __repr__(self) -> str:
        return f"DisplayText({self._text!r})"


@final
class _DisplayText(DisplayText, frozen=True, gc=False):
    def _from_form(self) -> None:
        return None


def display_text(text: str) -> DisplayText:
    """``text`` as display-only text: how the SDK hands over text a host wrote for people
    (``SubmitRejected.message``). It stays what every ``DisplayText`` is: shown, never sent,
    never equal to a ``str``."""
    return _DisplayText(text)


def _display(value: str | UnsetType) -> DisplayText | None:
    return None if isinstance(value, UnsetType) else _DisplayText(value)


RECOMMENDED: Final[DisplayText] = _DisplayText("recommended")
"""The ``badge`` of an option the agent marked ``recommended`` (internal)."""


class OptionView(msgspec.Struct, Generic[F], frozen=True, gc=False):
    """One option of a question. Only ``value`` is ever sent; the rest is for display."""

    question_id: QuestionId[F]
    """The question this option belongs to."""
    value: OptionValue[F]
    """What a response sends to select this option."""
    label: DisplayText
    """What to show for it (display only: never sent, never matched)."""
    position: int
    """1-based position in the question, as reported in result ``indices``."""
    description: DisplayText | None = None
    """A longer description to show, if the form gave one."""
    preview: DisplayText | None = None
    """Preview text to show (a ``preview`` question's content), if the form gave one."""
    badge: DisplayText | None = None
    """What to show beside the label: ``recommended`` for an option the agent marked so, else
    ``None``. Presentation for the person choosing: it never changes what is sent, implies
    no approval, and no part of the SDK selects by it."""

    @classmethod
    def from_wire(
        cls, question_id: QuestionId[F], option: AskOption, position: int
    ) -> OptionView[F]:
        """The view of a started event's option (what the client does for every form).

        Args:
            question_id: The id of the question the option belongs to.
            option: The option as the ``started`` event carries it.
            position: Its 1-based position in the question.
        """
        return cls(
            question_id=question_id,
            value=_option_value(option.value, question_id),
            label=_DisplayText(option.label),
            position=position,
            description=_display(option.description),
            preview=_display(option.preview),
            badge=RECOMMENDED if option.recommended is True else None,
        )


class QuestionView(msgspec.Struct, Generic[F], frozen=True, dict=True):
    """One question of a started form.

    ``type`` is what the host validates answers against (``multi`` takes several values;
    ``single`` and ``preview`` at most one); ``requested_type`` is what the agent asked for.
    """

    id: QuestionId[F]
    """The question's id: the key of its answer (``flow.question(id)`` finds it)."""
    _wire: AskQuestion
    # The started event's own (immutable) question: the label, prompt, type and options are
    # read from it when asked for, so a bridge that only answers never pays for display texts
    # (made on each read: they compare by text) nor for views of every option. ``options`` (the
    # ``OptionView``s) and the host's lookup table (``rules``, what ``AnswerBuilder`` checks
    # answers against) are made on first use and kept in its ``__dict__`` (``dict=True``; not
    # fields, so never compared or encoded). ``pi_ask_sdk.to_json`` writes it back as it came.

    @classmethod
    def from_wire(cls, question: AskQuestion, flow_id: FlowId) -> QuestionView[F]:
        """The view of a started event's question.

        Args:
            question: The question as the ``started`` event carries it.
            flow_id: The flow it belongs to (its ids and values remember it).
        """
        return cls(_question_id(question.id, flow_id), question)

    @property
    def label(self) -> DisplayText:
        """The question's short label (``Q<n>`` when the agent gave none): display only."""
        return _DisplayText(self._wire.label)

    @property
    def prompt(self) -> DisplayText:
        """The question put to the user: display only."""
        return _DisplayText(self._wire.prompt)

    @property
    def type(self) -> QuestionType:
        """What the host validates answers against: ``multi`` takes several values, ``single``
        and ``preview`` at most one. It can differ from ``requested_type`` (a host may present
        a single-choice question as multi); answer by this one."""
        return self._wire.type

    @property
    def requested_type(self) -> QuestionType:
        """The type the agent asked for (what the result reports); ``type`` when the host
        presents the question as asked."""
        return self._wire.requested

    @property
    def required(self) -> bool:
        """Whether the agent marked the question required. Advisory only: the host never
        enforces it (a submit that leaves the question unanswered is accepted) and decides
        everything itself. Show it (an asterisk, say); infer nothing else from it."""
        return self._wire.required

    @property
    def options(self) -> tuple[OptionView[F], ...]:
        """The options, in the form's order."""
        cache = self.__dict__
        options: tuple[OptionView[F], ...] | None = cache.get(_OPTIONS)
        if options is None:
            qid, from_wire = self.id, OptionView.from_wire
            options = cache[_OPTIONS] = tuple(
                [
                    from_wire(qid, option, position)
                    for position, option in enumerate(self._wire.options, 1)
                ]
            )
        return options

    @property
    def rules(self) -> QuestionIndex:
        """The host's lookup table for this question (``pi_ask_core.QuestionIndex``: each option
        value's label and 1-based position), what ``AnswerBuilder`` checks answers against;
        made from the form on first use and kept (the view is immutable)."""
        cache = self.__dict__
        index: QuestionIndex | None = cache.get(_RULES)
        if index is None:
            index = cache[_RULES] = QuestionIndex(self._wire)
        return index

    @property
    def multi(self) -> bool:
        """Whether several values may be selected (and combined with custom text)."""
        return self._wire.type == "multi"

    @property
    def values(self) -> tuple[OptionValue[F], ...]:
        """The options' values, in the form's order."""
        return tuple(option.value for option in self.options)

    def option(self, value: str) -> OptionView[F]:
        """The option whose *value* is exactly ``value``.

        A label never matches, even when no option has that value.

        Args:
            value: The option value to look up.

        Raises:
            UnknownOption: No option of this question has that value (naming the values).
        """
        # A linear scan: forms have a handful of options.
        if isinstance(value, str):
            for option in self.options:
                if option.value == value:
                    return option
        raise self._unknown(value)

    def value(self, value: str) -> OptionValue[F]:
        """This question's ``OptionValue`` that is exactly ``value``: what a response selects.

        Args:
            value: The option value to look up (never a label).

        Raises:
            UnknownOption: No option of this question has that value (naming the values).
        """
        # From the wire options: no OptionView is made for a value looked up by name.
        if isinstance(value, str):
            for option in self._wire.options:
                if option.value == value:
                    return _option_value(option.value, self.id)
        raise self._unknown(value)

    def has_value(self, value: str) -> bool:
        """Whether an option of this question has exactly this value (labels never match)."""
        return any(option.value == value for option in self._wire.options)

    def _unknown(self, value: object) -> UnknownOption:
        # A label passed by mistake is named by its text (as the bridge shows it), not its repr.
        shown = value.render() if isinstance(value, DisplayText) else value
        return UnknownOption(self.id, shown if isinstance(shown, str) else repr(shown), self.values)

    def __repr__(self) -> str:
        return (
            f"QuestionView(id={str(self.id)!r}, label={self.label!r}, prompt={self.prompt!r}, "
            f"type={self.type!r}, requested_type={self.requested_type!r}, "
            f"required={self.required!r}, options={self.options!r})"
        )


class FlowView(msgspec.Struct, Generic[F], frozen=True, gc=False):
    """A started form, as a bridge sees it.

    ``replay`` is true when the transport announced a form that was already open when the
    client connected (not a fresh ``started`` event). ``created_at`` is epoch milliseconds.
    """

    flow_id: FlowId
    """The flow's id: what a response is addressed to."""
    tool_call_id: str | None
    """The ``ask_user`` tool call that opened the form (``None`` when the host gave none)."""
    source: FlowSource
    """``"tool"`` for a form the agent opened, ``"ask:resume"`` for one reopened to resume."""
    title: DisplayText | None
    """The form's title, if it has one: display only."""
    created_at: float
    """When the host opened the form, in epoch milliseconds."""
    questions: tuple[QuestionView[F], ...]
    """The questions, in the form's order."""
    replay: bool = False
    """Whether the form was already open when the client connected (replayed, not fresh)."""

    @classmethod
    def from_started(cls, event: StartedEvent, *, replay: bool = False) -> FlowView[F]:
        """The view of a ``started`` event (what the client hands out for every form).

        Args:
            event: The decoded ``started`` payload.
            replay: Whether the form was replayed to a client that connected while it was open.
        """
        tool_call_id, title = event.tool_call_id, event.title
        flow_id = FlowId(event.flow_id)
        from_wire = QuestionView.from_wire
        return cls(
            flow_id,
            None if tool_call_id is UNSET else tool_call_id,
            event.source,
            None if title is UNSET else _DisplayText(title),
            event.created_at,
            tuple([from_wire(question, flow_id) for question in event.questions]),
            replay,
        )

    def to_started(self) -> StartedEvent:
        """The ``started`` event this view was made from (what ``to_json`` writes)."""
        return StartedEvent(
            flow_id=self.flow_id,
            tool_call_id=UNSET if self.tool_call_id is None else self.tool_call_id,
            source=self.source,
            title=UNSET if self.title is None else self.title.render(),
            questions=[question._wire for question in self.questions],
            created_at=self.created_at,
        )

    @property
    def question_ids(self) -> tuple[QuestionId[F], ...]:
        """The questions' ids, in the form's order."""
        return tuple(question.id for question in self.questions)

    def question(self, question_id: QuestionId[F] | str) -> QuestionView[F]:
        """The question with exactly this id: a ``QuestionId`` of this form (``question.id``),
        or the id's text as the form has it (``flow.question("deploy")``: a bridge knows the
        questions it has rules for by id). Labels never match.

        Args:
            question_id: A ``QuestionId`` of this form, or the id's text.

        Raises:
            UnknownQuestion: The form has no question with that id (naming the ids it has).
            FlowMismatch: ``question_id`` is a ``QuestionId`` taken from another flow.
        """
        other = foreign_flow(self.flow_id, question_id)
        if other is not None:
            raise FlowMismatch(self.flow_id, other, "question id")
        for question in self.questions:
            if question.id == question_id:
                return question
        raise UnknownQuestion(self.flow_id, str(question_id), self.question_ids)

    def has_question(self, question_id: QuestionId[F] | str) -> bool:
        """Whether the form has a question with exactly this id."""
        return any(question.id == question_id for question in self.questions)

    def same_form(self, other: FlowView[F]) -> bool:
        """Whether ``other`` is the same flow with the same form, ignoring ``created_at`` and
        ``replay`` (a replayed form compared with the one first seen).

        Args:
            other: Another view, usually of the same flow id.
        """
        return (
            self.flow_id == other.flow_id
            and self.tool_call_id == other.tool_call_id
            and self.source == other.source
            and self.title == other.title
            and self.questions == other.questions
        )
