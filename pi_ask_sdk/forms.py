"""Typed, read-only views of a started form: ``FlowView`` / ``QuestionView`` / ``OptionView``.

What a bridge may send and what it may only show have different types:

* ``OptionValue`` and ``QuestionId`` are ``str`` at run time, but neither can be constructed by
  a bridge (``OptionValue("yes")`` is a mypy ``abstract`` error and a ``TypeError``): they come
  only from a started form's views (``question.value("no")``, ``option.value``,
  ``question.id``). A response builder accepts nothing else, so a label or any other string
  never reaches the host as a value.
* Labels, prompts, titles, descriptions, previews and the recommendation marker are
  ``DisplayText``, which is not a ``str``: ``label == "Yes"`` is a mypy ``comparison-overlap``
  error, and a label cannot be passed where a value or id is wanted. Render it with ``str()``
  or ``.text``. Nothing a builder accepts can be obtained from a ``DisplayText``.

Lookups are by exact value/id; labels never match.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Final, NewType, final

import msgspec
from msgspec import UNSET, UnsetType

from pi_ask_core import AskOption, AskQuestion, FlowSource, QuestionType, StartedEvent

from .errors import UnknownOption, UnknownQuestion

__all__ = [
    "DisplayText",
    "FlowId",
    "FlowView",
    "OptionValue",
    "OptionView",
    "QuestionId",
    "QuestionView",
]

FlowId = NewType("FlowId", str)
"""The ``flowId`` of a started event; what a submit is addressed to (checked against the
``FlowView`` a response was built from, so a made-up one is refused before sending)."""


class QuestionId(str):
    """A question ``id`` of a started form (the keys of an answer); a ``str`` at run time.

    Obtained only from a form (``question.id``); ``QuestionId("deploy")`` is a type error.
    """

    __slots__ = ()

    if not TYPE_CHECKING:  # (type checkers see an abstract class: constructing it is an error)

        def __new__(cls, *args: object, **kwargs: object) -> str:
            if cls is QuestionId:
                raise TypeError(
                    "QuestionId cannot be constructed; take it from a QuestionView (.id)"
                )
            return super().__new__(cls, *args, **kwargs)

    def __init_subclass__(cls) -> None:
        if cls.__module__ != __name__:
            raise TypeError("QuestionId cannot be subclassed")

    @abc.abstractmethod
    def _from_form(self) -> None:
        """Marks the type abstract for type checkers: only this module makes instances."""


@final
class _QuestionId(QuestionId):
    __slots__ = ()

    def _from_form(self) -> None:
        return None


class OptionValue(str):
    """An option ``value`` of a started form: the only thing a bridge may send to select it.

    A ``str`` at run time (compare it, log it, use it as a key), but obtained only from a form
    (``question.value("no")``, ``option.value``, ``question.values``): ``OptionValue("x")`` is a
    type error (and a ``TypeError``). ``question_id`` is the question it belongs to.
    """

    __slots__ = ()

    if not TYPE_CHECKING:  # (type checkers see an abstract class: constructing it is an error)

        def __new__(cls, *args: object, **kwargs: object) -> str:
            if cls is OptionValue:
                raise TypeError(
                    "OptionValue cannot be constructed; take it from a QuestionView"
                    ' (question.value("..."), option.value)'
                )
            return super().__new__(cls, *args, **kwargs)

    def __init_subclass__(cls) -> None:
        if cls.__module__ != __name__:
            raise TypeError("OptionValue cannot be subclassed")

    @property
    @abc.abstractmethod
    def question_id(self) -> QuestionId:
        """The question this value belongs to."""


@final
class _OptionValue(OptionValue):
    # The question id in a slot, not an instance __dict__: a view makes a value per lookup, and
    # a dict per value cost more than the str itself. Made by _option_value.
    __slots__ = ("_question_id",)
    _question_id: QuestionId

    @property
    def question_id(self) -> QuestionId:
        return self._question_id

    def __reduce__(self) -> tuple[object, ...]:
        return (_option_value, (str(self), self._question_id))


RULES: Final = "_rules"
"""Internal: the key of a ``QuestionView``'s ``QuestionIndex`` in its ``__dict__``."""
_OPTIONS: Final = "_options"


def _question_id(text: str) -> QuestionId:
    return _QuestionId(text)


def _option_value(text: str, question_id: QuestionId) -> _OptionValue:
    """The value ``text`` of the question ``question_id``."""
    value = _OptionValue(text)
    value._question_id = question_id
    return value


# The views, responses and events below are ``gc=False``: immutable trees of strings, tuples and
# one another, they can never be part of a reference cycle, and a bridge makes dozens per form.


@final
class DisplayText(msgspec.Struct, frozen=True, gc=False):
    """Text for display only (a label, prompt, title, description, preview or marker).

    Not a ``str``, so it can never be compared with a string or passed as a value under mypy
    ``--strict``; ``str(text)``, ``text.text`` and f-strings render it.
    """

    text: str

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)


def _display(value: str | UnsetType) -> DisplayText | None:
    return None if isinstance(value, UnsetType) else DisplayText(value)


RECOMMENDED: DisplayText = DisplayText("recommended")


class OptionView(msgspec.Struct, frozen=True, gc=False):
    """One option of a question. Only ``value`` is ever sent; the rest is for display."""

    question_id: QuestionId
    value: OptionValue
    label: DisplayText
    position: int
    """1-based position in the question, as reported in result ``indices``."""
    description: DisplayText | None = None
    preview: DisplayText | None = None
    recommended: DisplayText | None = None
    """``DisplayText("recommended")`` for an option the agent marked ``recommended``, else
    ``None``. Presentation only: it never changes what is sent, nor implies approval."""

    @classmethod
    def from_wire(cls, question_id: QuestionId, option: AskOption, position: int) -> OptionView:
        return cls(
            question_id=question_id,
            value=_option_value(option.value, question_id),
            label=DisplayText(option.label),
            position=position,
            description=_display(option.description),
            preview=_display(option.preview),
            recommended=RECOMMENDED if option.recommended is True else None,
        )


class QuestionView(msgspec.Struct, frozen=True, dict=True):
    """One question of a started form.

    ``type`` is what the host validates answers against (``multi`` takes several values;
    ``single`` and ``preview`` at most one); ``requested_type`` is what the agent asked for.
    """

    id: QuestionId
    label: DisplayText
    prompt: DisplayText
    type: QuestionType
    requested_type: QuestionType
    required: bool
    _wire: tuple[AskOption, ...]
    # The started event's own (immutable) options. ``options`` (the ``OptionView``s) and the
    # host's lookup table (``RULES``, what ``AnswerBuilder`` checks answers against) are made
    # from them on first use and kept in ``__dict__`` (``dict=True``; not fields, so never
    # compared or encoded): a bridge that only answers never pays for views of every option.

    @classmethod
    def from_wire(cls, question: AskQuestion) -> QuestionView:
        return cls(
            _QuestionId(question.id),
            DisplayText(question.label),
            DisplayText(question.prompt),
            question.type,
            question.requested,
            question.required,
            tuple(question.options),
        )

    @property
    def options(self) -> tuple[OptionView, ...]:
        """The options, in the form's order."""
        cache = self.__dict__
        options: tuple[OptionView, ...] | None = cache.get(_OPTIONS)
        if options is None:
            qid, from_wire = self.id, OptionView.from_wire
            options = cache[_OPTIONS] = tuple(
                [from_wire(qid, option, position) for position, option in enumerate(self._wire, 1)]
            )
        return options

    @property
    def multi(self) -> bool:
        """Whether several values may be selected (and combined with custom text)."""
        return self.type == "multi"

    @property
    def values(self) -> tuple[OptionValue, ...]:
        return tuple(option.value for option in self.options)

    def option(self, value: str) -> OptionView:
        """The option whose *value* is exactly ``value``; raises ``UnknownOption`` otherwise.

        A label never matches, even when no option has that value.
        """
        # A linear scan: forms have a handful of options.
        if isinstance(value, str):
            for option in self.options:
                if option.value == value:
                    return option
        raise self._unknown(value)

    def value(self, value: str) -> OptionValue:
        """This question's ``OptionValue`` that is exactly ``value``; ``UnknownOption`` if none."""
        # From the wire options: no OptionView is made for a value looked up by name.
        if isinstance(value, str):
            for option in self._wire:
                if option.value == value:
                    return _option_value(option.value, self.id)
        raise self._unknown(value)

    def has_value(self, value: str) -> bool:
        return any(option.value == value for option in self._wire)

    def _unknown(self, value: object) -> UnknownOption:
        # A label passed by mistake is named by its text (as the bridge shows it), not its repr.
        shown = value.text if isinstance(value, DisplayText) else value
        return UnknownOption(self.id, shown if isinstance(shown, str) else repr(shown), self.values)

    def __repr__(self) -> str:
        return (
            f"QuestionView(id={str(self.id)!r}, label={self.label!r}, prompt={self.prompt!r}, "
            f"type={self.type!r}, requested_type={self.requested_type!r}, "
            f"required={self.required!r}, options={self.options!r})"
        )


class FlowView(msgspec.Struct, frozen=True, gc=False):
    """A started form, as a bridge sees it.

    ``replay`` is true when the transport announced a form that was already open when the
    client connected (not a fresh ``started`` event). ``created_at`` is epoch milliseconds.
    """

    flow_id: FlowId
    tool_call_id: str | None
    source: FlowSource
    title: DisplayText | None
    created_at: float
    questions: tuple[QuestionView, ...]
    replay: bool = False

    @classmethod
    def from_started(cls, event: StartedEvent, *, replay: bool = False) -> FlowView:
        tool_call_id, title = event.tool_call_id, event.title
        return cls(
            FlowId(event.flow_id),
            None if tool_call_id is UNSET else tool_call_id,
            event.source,
            None if title is UNSET else DisplayText(title),
            event.created_at,
            tuple(QuestionView.from_wire(question) for question in event.questions),
            replay,
        )

    @property
    def question_ids(self) -> tuple[QuestionId, ...]:
        return tuple(question.id for question in self.questions)

    def question(self, question_id: str) -> QuestionView:
        """The question with exactly this id; raises ``UnknownQuestion`` naming it otherwise."""
        for question in self.questions:
            if question.id == question_id:
                return question
        raise UnknownQuestion(self.flow_id, str(question_id), self.question_ids)

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
