"""Submit checks (spec §4): the envelope, then (after the host's flow lookup) the answers.

Both steps take plain decoded JSON (dicts, lists, strings, numbers) and never raise on any
input: every problem becomes a ``SubmitError`` with the spec's code and echoed ids, or an
``AnswerProblem`` that the host reports as ``invalid_answer``. Messages are our own wording and
name the offending field, question id or option value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, TypeAlias, TypeGuard, TypeVar, final

import msgspec

from ._clean import clean_text, is_plain
from .js import is_blank, js_object, js_ordered_keys
from .protocol import (
    AskOption,
    AskQuestion,
    QuestionType,
    ResultMode,
    SubmitErrorCode,
    SubmitRejection,
)

__all__ = [
    "AcceptedAnswer",
    "AcceptedResponse",
    "AnswerProblem",
    "AnswerRule",
    "CheckedEnvelope",
    "Envelope",
    "FormIndex",
    "QuestionIndex",
    "Selection",
    "SubmitError",
    "check_answer",
    "check_answer_response",
    "check_custom_text",
    "check_envelope",
    "check_mode",
    "check_option_notes",
    "check_question_answer",
    "check_selections",
    "check_values",
    "is_json_object",
    "is_version_one",
    "parse_envelope",
]

AnswerRule = Literal[
    "answers_not_object",
    "invalid_mode",
    "unknown_question",
    "answer_not_object",
    "values_not_strings",
    "duplicate_value",
    "too_many_values",
    "custom_text_not_string",
    "value_with_custom_text",
    "note_not_string",
    "option_notes_not_object",
    "unknown_value",
    "unknown_option_note",
]
"""Which answer rule (spec §4.2 A1-A4, §4.3 P1-P10) refused an answer; all are reported by the
host as ``invalid_answer``. Listed in the order the host checks them."""

_ABSENT: Final = object()
_Key = TypeVar("_Key", bound=str)


# SubmitError and AnswerProblem are final: the checks' results are told apart with
# ``type(x) is AnswerProblem``, an exact test that no subclass can defeat and that does not go
# through the Struct metaclass's ``__instancecheck__`` for every valid answer.


@final
class SubmitError(msgspec.Struct, frozen=True, gc=False):
    """A refused submit: the ``error``/``message`` of the ``submit-result`` and the echoed ids."""

    code: SubmitErrorCode
    message: str
    request_id: str
    flow_id: str


class Envelope(msgspec.Struct, frozen=True, gc=False):
    """A submit that passed checks E1-E6. ``response`` is the raw response object."""

    request_id: str
    flow_id: str
    kind: Literal["answer", "cancel"]
    response: Mapping[str, object]


@final
class AnswerProblem(msgspec.Struct, frozen=True, gc=False):
    """Why an answer response was refused (reported as ``invalid_answer`` with ``message``)."""

    message: str
    rule: AnswerRule


class Selection(msgspec.Struct, frozen=True, gc=False):
    """One selected option of an accepted answer: its value, label and 1-based position."""

    value: str
    label: str
    index: int  # 1-based position of the option in its question


class AcceptedAnswer(msgspec.Struct, frozen=True, gc=False):
    """The host's state for one answered question (spec §4.3 semantics)."""

    selections: tuple[Selection, ...] = ()
    custom_text: str | None = None  # raw, only when not blank
    note: str | None = None  # raw, only when not blank
    option_notes: dict[str, str] = msgspec.field(default_factory=dict)  # non-blank, JS key order


class AcceptedResponse(msgspec.Struct, frozen=True, gc=False):
    """An answer response the rules accepted: its mode and each question's accepted answer."""

    mode: ResultMode
    answers: dict[str, AcceptedAnswer]  # JS key order; replaces the whole answer set


class QuestionIndex:
    """Lookup table for checking answers to one question (built once per question).

    ``options`` maps each option value to its (label, 1-based position). ``question`` is the
    question it was built from, or None when built with ``of`` (as the form walk does while it
    checks the options, and the SDK's builder from a form view).
    """

    __slots__ = ("_known", "id", "multi", "options", "question", "type")

    def __init__(self, question: AskQuestion) -> None:
        self._known: str | None = None
        self.question: AskQuestion | None = question
        self.id = question.id
        self.type: QuestionType = question.type
        self.multi = question.type == "multi"
        self.options = QuestionIndex.table(question.options)

    @staticmethod
    def table(options: Iterable[AskOption]) -> dict[str, tuple[str, int]]:
        """The ``options`` table of a question's options: value -> (label, 1-based position)."""
        return {
            option.value: (option.label, position) for position, option in enumerate(options, 1)
        }

    @classmethod
    def of(
        cls, question_id: str, question_type: QuestionType, options: dict[str, tuple[str, int]]
    ) -> QuestionIndex:
        """An index from its parts: ``options`` maps value -> (label, 1-based position)."""
        index = cls.__new__(cls)
        index._known = index.question = None
        index.id, index.type, index.options = question_id, question_type, options
        index.multi = question_type == "multi"
        return index

    def _known_values(self) -> str:
        """The option values as a message lists them (built on first use, then kept)."""
        known = self._known
        if known is None:
            known = self._known = ", ".join([f'"{value}"' for value in self.options])
        return known


class FormIndex:
    """Lookup tables for checking answers against one form, built once per flow."""

    __slots__ = ("_known", "questions")

    def __init__(self, questions: Sequence[AskQuestion]) -> None:
        self._known: str | None = None
        self.questions: dict[str, QuestionIndex] = {q.id: QuestionIndex(q) for q in questions}

    @classmethod
    def of(cls, questions: dict[str, QuestionIndex]) -> FormIndex:
        """An index from prebuilt question indexes (question id -> index, in form order)."""
        index = cls.__new__(cls)
        index._known = None
        index.questions = questions
        return index

    def _known_questions(self) -> str:
        """The question ids as a message lists them (built on first use, then kept)."""
        known = self._known
        if known is None:
            known = self._known = ", ".join([f'"{qid}"' for qid in self.questions])
        return known


# What each exact JSON value type is called in messages. These types are never Mappings, so
# is_json_object answers for them by their exact type and keeps the ABC check
# (isinstance(value, Mapping)) for the other objects a Python caller may pass.
_KINDS: Final[dict[type, str]] = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "a string",
    list: "an array",
    tuple: "an array",
    dict: "an object",
}


def is_json_object(value: object) -> TypeGuard[Mapping[str, object]]:
    """A JSON object: a dict (what a JSON decoder gives) or any other Mapping."""
    kind = type(value)
    if kind is dict:
        return True
    if kind in _KINDS:
        return False
    return isinstance(value, Mapping)


def _all_strings(items: Iterable[object]) -> bool:
    # A plain loop: it stops at the first item that is not a string, with no generator to make.
    for item in items:  # noqa: SIM110
        if type(item) is not str and not isinstance(item, str):
            return False
    return True


def _is_string_array(value: object) -> TypeGuard[Sequence[str]]:
    """A JSON array of strings (a list, or a tuple from a Python caller)."""
    if type(value) is list or isinstance(value, tuple):
        return _all_strings(value)
    return False


def _kind_of(value: object) -> str:
    kind = _KINDS.get(type(value))
    if kind is not None:
        return kind
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _show(value: object) -> str:
    """A short JSON-ish rendering of a value for messages; never raises."""
    try:
        text = msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        text = _kind_of(value)
    return text if len(text) <= 80 else text[:77] + "..."


def is_version_one(value: object) -> bool:
    """Whether ``value`` is the JavaScript number 1 (a submit's ``version``): JSON 1 or 1.0,
    never ``True`` (spec A9)."""
    return type(value) in (int, float) and value == 1


_NO_REQUEST_ID: Final = "Submit requestId is required: a non-empty string chosen by the bridge."
_NO_FLOW_ID: Final = "Submit flowId is required: the flowId of the started event."


def parse_envelope(data: object) -> Envelope | SubmitError:
    """Checks E1-E6 of spec §4.1, in order."""
    checked = check_envelope(data)
    if isinstance(checked, tuple):
        return Envelope(*checked)
    return SubmitError(checked.error, checked.message, checked.request_id, checked.flow_id)


CheckedEnvelope: TypeAlias = tuple[str, str, Literal["answer", "cancel"], Mapping[str, object]]
"""A submit's envelope that passed E1-E6: request id, flow id, response kind, response."""


def check_envelope(data: object) -> CheckedEnvelope | SubmitRejection:
    """``parse_envelope`` as the host takes it: a plain tuple (request id, flow id, kind,
    response), or the ``submit-result`` refusing it (no ``Envelope`` or ``SubmitError`` made
    and freed on the way)."""
    # ``type(...) is dict or``: the exact dict a JSON decoder gives is an object at once;
    # anything else is ``is_json_object``'s to decide.
    if not (type(data) is dict or is_json_object(data)):
        return SubmitRejection(
            request_id="",
            flow_id="",
            error="invalid_request",
            message=f"A submit must be a JSON object, not {_kind_of(data)}.",
        )
    # ``data.get(...)`` each time rather than a bound ``get = data.get``: that would be a
    # method object made and freed on every submit, to save a few attribute lookups.
    request_id, flow_id = data.get("requestId"), data.get("flowId")
    version = data.get("version", _ABSENT)
    rid = request_id if isinstance(request_id, str) else ""
    fid = flow_id if isinstance(flow_id, str) else ""
    message: str
    if not ((type(version) is int and version == 1) or is_version_one(version)):
        shown = "missing" if version is _ABSENT else _show(version)
        message = f"Submit version must be the number 1, got {shown}."
    elif not rid:
        message = _NO_REQUEST_ID
    elif not fid:
        message = _NO_FLOW_ID
    else:
        response = data.get("response")
        if not (type(response) is dict or is_json_object(response)):
            message = f"Submit response must be an object, not {_kind_of(response)}."
        else:
            kind = response.get("kind")
            if kind == "answer" or kind == "cancel":
                return rid, fid, kind, response
            message = f'Submit response.kind must be "answer" or "cancel", got {_show(kind)}.'
    return SubmitRejection(request_id=rid, flow_id=fid, error="invalid_request", message=message)


def check_answer_response(
    response: Mapping[str, object], form: FormIndex
) -> AcceptedResponse | AnswerProblem:
    """Checks A1-A4 of spec §4.2 for a ``kind: "answer"`` response; the first failure wins."""
    answers = response.get("answers")
    if not (type(answers) is dict or is_json_object(answers)):
        return AnswerProblem(
            "An answer response must include an answers object (question id -> answer), "
            f"got {_kind_of(answers) if 'answers' in response else 'none'}.",
            "answers_not_object",
        )
    raw_mode = response.get("mode", "submit")
    mode: ResultMode
    if raw_mode == "submit" and type(raw_mode) is str:
        mode = "submit"  # the common case, without a call
    else:
        checked = check_mode(raw_mode)
        if type(checked) is AnswerProblem:
            return checked
        mode = checked
    questions = form.questions
    accepted: dict[str, AcceptedAnswer] = {}
    keys: Iterable[str] = answers
    if len(answers) > 1:  # (one key has no order to fix)
        for key in answers:
            if type(key) is not str or key[:1].isdigit():
                keys = js_ordered_keys(answers)  # JavaScript puts array-index keys first
                break
    for key in keys:
        qid = key
        index = questions.get(qid) if isinstance(qid, str) else None
        if index is None and isinstance(qid, str) and not is_plain(qid):
            qid = clean_text(qid)  # compared as valid text, as the form's ids are
            index = questions.get(qid)
        if index is None:
            return AnswerProblem(
                f'Unknown question id "{qid}"; this form has {form._known_questions()}.',
                "unknown_question",
            )
        answer = check_answer(qid, answers[key], index)
        if type(answer) is AnswerProblem:
            return answer
        accepted[qid] = answer
    return AcceptedResponse(mode, accepted)


def check_mode(mode: object) -> ResultMode | AnswerProblem:
    """Check A2 of spec §4.2: an answer's ``mode`` (``"submit"`` when absent).

    Args:
        mode: The response's ``mode`` as decoded JSON.

    Returns:
        The mode, or the ``AnswerProblem`` (``invalid_mode``) the host would refuse it with.
    """
    if mode == "submit" and isinstance(mode, str):
        return "submit"
    if mode == "elaborate" and isinstance(mode, str):
        return "elaborate"
    return AnswerProblem(
        f'Answer mode must be "submit" or "elaborate", got {_show(mode)}.', "invalid_mode"
    )


def check_question_answer(question: AskQuestion, entry: object) -> AcceptedAnswer | AnswerProblem:
    """Checks P1-P10 of spec §4.3 for one answer (decoded JSON) to ``question``, in the host's
    order; the first failure wins. Pure: the same verdict and message the host would give.

    For checking many answers to one form, build a ``FormIndex`` once and use
    ``check_answer_response``.

    Args:
        question: The question, as the ``started`` event carries it.
        entry: Its answer, as decoded JSON.

    Returns:
        The accepted answer, or the first ``AnswerProblem`` (never raises).
    """
    return check_answer(question.id, entry, QuestionIndex(question))


def check_answer(qid: str, entry: object, index: QuestionIndex) -> AcceptedAnswer | AnswerProblem:
    """Checks P1-P10 of spec §4.3 for one question's answer (decoded JSON), in order.

    The JSON-type checks are here; the rules on the typed parts are ``check_values``,
    ``check_custom_text``, ``check_selections`` and ``check_option_notes``, which the SDK's
    ``AnswerBuilder`` calls too.
    """
    if not (type(entry) is dict or is_json_object(entry)):
        return AnswerProblem(
            f'The answer for question "{qid}" must be an object, not {_kind_of(entry)}.',
            "answer_not_object",
        )
    raw_values = entry.get("values", _ABSENT)  # (no bound get: see parse_envelope)
    values: Sequence[str]
    if raw_values is _ABSENT:
        values = ()
    elif type(raw_values) is list and len(raw_values) == 1 and type(raw_values[0]) is str:
        values = raw_values  # one selected value: the common case, without a call
    elif _is_string_array(raw_values):
        values = raw_values
        # P2-P3 can only refuse two or more values.
        if len(values) > 1:
            problem = check_values(qid, values, index)
            if problem is not None:
                return problem
    else:
        return AnswerProblem(
            f'values for question "{qid}" must be an array of option value strings, '
            f"got {_show(raw_values)}.",
            "values_not_strings",
        )
    custom = entry.get("customText", _ABSENT)
    custom_text: str | None = None
    if custom is not _ABSENT:
        if not isinstance(custom, str):
            return AnswerProblem(
                f'customText for question "{qid}" must be a string, not {_kind_of(custom)}.',
                "custom_text_not_string",
            )
        if not is_blank(custom):
            custom_text = custom
            problem = check_custom_text(qid, custom_text, bool(values), index)
            if problem is not None:
                return problem
    raw_note = entry.get("note", _ABSENT)
    note: str | None = None
    if raw_note is _ABSENT:
        pass
    elif isinstance(raw_note, str):
        if not is_blank(raw_note):
            note = raw_note
    else:
        return AnswerProblem(
            f'note for question "{qid}" must be a string, not {_kind_of(raw_note)}.',
            "note_not_string",
        )
    raw_notes = entry.get("optionNotes", _ABSENT)
    notes: Mapping[str, object] | None = None
    if raw_notes is not _ABSENT:
        if not is_json_object(raw_notes) or not _all_strings(raw_notes.values()):
            return AnswerProblem(
                f'optionNotes for question "{qid}" must be an object mapping option values '
                "to note strings.",
                "option_notes_not_object",
            )
        notes = raw_notes
    selections = check_selections(qid, values, index) if values else ()
    if type(selections) is AnswerProblem:
        return selections
    if notes:
        kept = check_option_notes(qid, notes, index)
        if type(kept) is AnswerProblem:
            return kept
        return AcceptedAnswer(selections, custom_text, note, kept)
    return AcceptedAnswer(selections, custom_text, note)


# --- per-question rules on typed parts (the host's, and the SDK builder's) ----------------------


def check_values(qid: str, values: Sequence[str], index: QuestionIndex) -> AnswerProblem | None:
    """Rules P2-P3 of spec §4.3 on selected option values (strings): no value twice
    (``duplicate_value``), and at most one unless the question is multi (``too_many_values``).

    Reads only ``index.type`` and ``index.multi`` (the SDK's builder relies on it: it checks a
    form's own values against an index of the question's type alone)."""
    count = len(values)
    if count > 1:
        if len(set(values)) != count:
            shown = _show([str(value) for value in values])  # plain str: the SDK's carry an id
            return AnswerProblem(
                f'values for question "{qid}" must be unique, got {shown}.',
                "duplicate_value",
            )
        if not index.multi:
            return AnswerProblem(
                f'Question "{qid}" is a {index.type} question and accepts only one selected '
                f"value, got {count}.",
                "too_many_values",
            )
    return None


def check_custom_text(
    qid: str, custom_text: str | None, has_values: bool, index: QuestionIndex
) -> AnswerProblem | None:
    """Rule P5 of spec §4.3: non-blank custom text goes with a selected value only on a multi
    question (``value_with_custom_text``). Blank custom text (None here) is ignored.

    Reads only ``index.type`` and ``index.multi``, as ``check_values`` does."""
    if custom_text is not None and has_values and not index.multi:
        return AnswerProblem(
            f'Question "{qid}" is a {index.type} question and cannot combine a selected value '
            "with custom text.",
            "value_with_custom_text",
        )
    return None


def check_selections(
    qid: str, values: Sequence[str], index: QuestionIndex
) -> tuple[Selection, ...] | AnswerProblem:
    """Rule P9 of spec §4.3: every value is an option value of the question, never a label
    (``unknown_value``); the selections with their labels and 1-based positions."""
    options = index.options
    selections = []
    cleaned = False
    for value in values:
        found = options.get(value)
        if found is None and not is_plain(value):
            value = clean_text(value)  # compared as valid text, as the form's values are
            found = options.get(value)
            cleaned = True
        if found is None:
            return AnswerProblem(
                f'Unknown option value "{value}" for question "{qid}"; send one of its option '
                f"values ({index._known_values()}), never a label.",
                "unknown_value",
            )
        selections.append(Selection(value, found[0], found[1]))
    if cleaned and len({selection.value for selection in selections}) != len(selections):
        # Values told apart only by text that is not valid are one value (P2).
        shown = _show([selection.value for selection in selections])
        return AnswerProblem(
            f'values for question "{qid}" must be unique, got {shown}.', "duplicate_value"
        )
    return tuple(selections)


def check_option_notes(
    qid: str, notes: Mapping[_Key, object], index: QuestionIndex
) -> dict[str, str] | AnswerProblem:
    """Rule P10 of spec §4.3: each non-blank option note names an option value of the question
    (``unknown_option_note``); the non-blank notes in JavaScript key order. Blank notes (and,
    for decoded JSON checked by ``check_answer``, nothing else) are skipped."""
    options = index.options
    kept: list[tuple[str, str]] = []
    for key in js_ordered_keys(notes):
        text = notes[key]
        if not isinstance(text, str) or is_blank(text):
            continue
        value: object = key
        if isinstance(key, str) and key not in options and not is_plain(key):
            value = clean_text(key)  # compared as valid text, as the form's values are
        if not isinstance(value, str) or value not in options:
            return AnswerProblem(
                f'optionNotes for question "{qid}" name unknown option value "{value}".',
                "unknown_option_note",
            )
        kept.append((value, text))
    return js_object(kept)
