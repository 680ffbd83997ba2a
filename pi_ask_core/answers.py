"""Submit checks (spec §4): the envelope, then (after the host's flow lookup) the answers.

Both steps take plain decoded JSON (dicts, lists, strings, numbers) and never raise on any
input: every problem becomes a ``SubmitError`` with the spec's code and echoed ids, or an
``AnswerProblem`` that the host reports as ``invalid_answer``. Messages are our own wording and
name the offending field, question id or option value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, TypeGuard

import msgspec

from .js import is_blank, js_object, js_ordered_keys
from .protocol import AskQuestion, ResultMode, SubmitErrorCode

__all__ = [
    "AcceptedAnswer",
    "AcceptedResponse",
    "AnswerProblem",
    "AnswerRule",
    "Envelope",
    "FormIndex",
    "QuestionIndex",
    "Selection",
    "SubmitError",
    "check_answer",
    "check_answer_response",
    "check_mode",
    "check_question_answer",
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


class SubmitError(msgspec.Struct, frozen=True):
    """A refused submit: the ``error``/``message`` of the ``submit-result`` and the echoed ids."""

    code: SubmitErrorCode
    message: str
    request_id: str
    flow_id: str


class Envelope(msgspec.Struct, frozen=True):
    """A submit that passed checks E1-E6. ``response`` is the raw response object."""

    request_id: str
    flow_id: str
    kind: Literal["answer", "cancel"]
    response: Mapping[str, object]


class AnswerProblem(msgspec.Struct, frozen=True):
    """Why an answer response was refused (reported as ``invalid_answer`` with ``message``)."""

    message: str
    rule: AnswerRule


class Selection(msgspec.Struct, frozen=True):
    value: str
    label: str
    index: int  # 1-based position of the option in its question


class AcceptedAnswer(msgspec.Struct, frozen=True):
    """The host's state for one answered question (spec §4.3 semantics)."""

    selections: tuple[Selection, ...] = ()
    custom_text: str | None = None  # raw, only when not blank
    note: str | None = None  # raw, only when not blank
    option_notes: dict[str, str] = msgspec.field(default_factory=dict)  # non-blank, JS key order


class AcceptedResponse(msgspec.Struct, frozen=True):
    mode: ResultMode
    answers: dict[str, AcceptedAnswer]  # JS key order; replaces the whole answer set


class QuestionIndex:
    """Lookup table for checking answers to one question (built once per question)."""

    __slots__ = ("options", "question")

    def __init__(self, question: AskQuestion) -> None:
        self.question = question
        self.options: dict[str, tuple[str, int]] = {
            option.value: (option.label, position)
            for position, option in enumerate(question.options, start=1)
        }


class FormIndex:
    """Lookup tables for checking answers against one form, built once per flow."""

    __slots__ = ("questions",)

    def __init__(self, questions: Sequence[AskQuestion]) -> None:
        self.questions: dict[str, QuestionIndex] = {q.id: QuestionIndex(q) for q in questions}


def _is_object(value: object) -> TypeGuard[Mapping[str, object]]:
    """A JSON object: a dict (the fast, common case) or any other Mapping."""
    return type(value) is dict or isinstance(value, Mapping)


def _all_strings(items: Iterable[object]) -> bool:
    # A plain loop: measurably faster than all() over a generator on this hot path.
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
    except (TypeError, ValueError, OverflowError):
        text = _kind_of(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_version_one(value: object) -> bool:
    # The JavaScript number 1: JSON 1 or 1.0, never True (spec A9).
    return type(value) in (int, float) and value == 1


def parse_envelope(data: object) -> Envelope | SubmitError:
    """Checks E1-E6 of spec §4.1, in order."""
    if not _is_object(data):
        return SubmitError(
            "invalid_request", f"A submit must be a JSON object, not {_kind_of(data)}.", "", ""
        )
    request_id = data.get("requestId")
    flow_id = data.get("flowId")
    rid = request_id if isinstance(request_id, str) else ""
    fid = flow_id if isinstance(flow_id, str) else ""

    def refuse(message: str) -> SubmitError:
        return SubmitError("invalid_request", message, rid, fid)

    if not _is_version_one(data.get("version", _ABSENT)):
        shown = "missing" if "version" not in data else _show(data["version"])
        return refuse(f"Submit version must be the number 1, got {shown}.")
    if not rid:
        return refuse("Submit requestId is required: a non-empty string chosen by the bridge.")
    if not fid:
        return refuse("Submit flowId is required: the flowId of the started event.")
    response = data.get("response")
    if not _is_object(response):
        return refuse(f"Submit response must be an object, not {_kind_of(response)}.")
    kind = response.get("kind")
    if kind != "answer" and kind != "cancel":
        return refuse(f'Submit response.kind must be "answer" or "cancel", got {_show(kind)}.')
    return Envelope(rid, fid, kind, response)


def check_answer_response(
    response: Mapping[str, object], form: FormIndex
) -> AcceptedResponse | AnswerProblem:
    """Checks A1-A4 of spec §4.2 for a ``kind: "answer"`` response; the first failure wins."""
    answers = response.get("answers")
    if not _is_object(answers):
        return AnswerProblem(
            "An answer response must include an answers object (question id -> answer), "
            f"got {_kind_of(answers) if 'answers' in response else 'none'}.",
            "answers_not_object",
        )
    mode = check_mode(response.get("mode", "submit"))
    if isinstance(mode, AnswerProblem):
        return mode
    accepted: list[tuple[str, AcceptedAnswer]] = []
    for key in js_ordered_keys(answers):
        index = form.questions.get(key) if isinstance(key, str) else None
        if index is None:
            known = ", ".join(f'"{qid}"' for qid in form.questions)
            return AnswerProblem(
                f'Unknown question id "{key}"; this form has {known}.', "unknown_question"
            )
        answer = check_answer(key, answers[key], index)
        if isinstance(answer, AnswerProblem):
            return answer
        accepted.append((key, answer))
    return AcceptedResponse(mode, dict(accepted))


def check_mode(mode: object) -> ResultMode | AnswerProblem:
    """Check A2 of spec §4.2: an answer's ``mode`` (``"submit"`` when absent)."""
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
    """
    return check_answer(question.id, entry, QuestionIndex(question))


def check_answer(qid: str, entry: object, index: QuestionIndex) -> AcceptedAnswer | AnswerProblem:
    """Checks P1-P10 of spec §4.3 for one question's answer, in order."""
    if not _is_object(entry):
        return AnswerProblem(
            f'The answer for question "{qid}" must be an object, not {_kind_of(entry)}.',
            "answer_not_object",
        )
    qtype = index.question.type
    get = entry.get
    raw_values = get("values", _ABSENT)
    values: Sequence[str]
    if raw_values is _ABSENT:
        values = ()
    elif _is_string_array(raw_values):
        values = raw_values
    else:
        return AnswerProblem(
            f'values for question "{qid}" must be an array of option value strings, '
            f"got {_show(raw_values)}.",
            "values_not_strings",
        )
    if len(values) > 1 and len(set(values)) != len(values):
        return AnswerProblem(
            f'values for question "{qid}" must be unique, got {_show(list(values))}.',
            "duplicate_value",
        )
    if qtype != "multi" and len(values) > 1:
        return AnswerProblem(
            f'Question "{qid}" is a {qtype} question and accepts only one selected value, '
            f"got {len(values)}.",
            "too_many_values",
        )
    custom = get("customText", _ABSENT)
    if custom is not _ABSENT and not isinstance(custom, str):
        return AnswerProblem(
            f'customText for question "{qid}" must be a string, not {_kind_of(custom)}.',
            "custom_text_not_string",
        )
    custom_text = custom if isinstance(custom, str) and not is_blank(custom) else None
    if custom_text is not None and qtype != "multi" and values:
        return AnswerProblem(
            f'Question "{qid}" is a {qtype} question and cannot combine a selected value '
            "with custom text.",
            "value_with_custom_text",
        )
    note = get("note", _ABSENT)
    if note is not _ABSENT and not isinstance(note, str):
        return AnswerProblem(
            f'note for question "{qid}" must be a string, not {_kind_of(note)}.', "note_not_string"
        )
    raw_notes = get("optionNotes", _ABSENT)
    notes: Mapping[str, object] = {}
    if raw_notes is not _ABSENT:
        if not _is_object(raw_notes) or not _all_strings(raw_notes.values()):
            return AnswerProblem(
                f'optionNotes for question "{qid}" must be an object mapping option values '
                "to note strings.",
                "option_notes_not_object",
            )
        notes = raw_notes
    options = index.options
    selections = []
    for value in values:
        found = options.get(value)
        if found is None:
            known = ", ".join(f'"{v}"' for v in options)
            return AnswerProblem(
                f'Unknown option value "{value}" for question "{qid}"; send one of its option '
                f"values ({known}), never a label.",
                "unknown_value",
            )
        selections.append(Selection(value, found[0], found[1]))
    kept: list[tuple[str, str]] = []
    for key in js_ordered_keys(notes):
        text = notes[key]
        if not isinstance(text, str) or is_blank(text):
            continue
        if not isinstance(key, str) or key not in options:
            return AnswerProblem(
                f'optionNotes for question "{qid}" name unknown option value "{key}".',
                "unknown_option_note",
            )
        kept.append((key, text))
    return AcceptedAnswer(
        selections=tuple(selections),
        custom_text=custom_text,
        note=note if isinstance(note, str) and not is_blank(note) else None,
        option_notes=js_object(kept),
    )
