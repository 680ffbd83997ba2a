"""ask_user input -> normalized form (spec §2).

One pipeline, one walk over the input: the JSON types of the input (spec §2.1 step 2) are the
fields of the ``_In*`` Structs below, so msgspec converts well-formed input in C; only input it
refuses is walked by ``check_structure``, which reports every issue with its path. The typed
input is then walked once for label derivation (§2.2), every semantic issue (§2.3, collected in
the spec's order) and the normalized questions (§2.4); preview files (§2.5) are read last, once
the form is otherwise valid.

Decision on the structural check (spec A30): a key that is *missing* is treated as empty, so
the semantic rules report it with their own path (``value is required``, as in the spec's
example V3); a key that is *present with the wrong JSON type* (``null`` included) is a
``schema_error``, which Pi's tool schema would have refused before the extension ran.
"""

from __future__ import annotations

import functools
import os
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Final, TypeGuard

import msgspec
from msgspec import UNSET, UnsetType

from .answers import FormIndex, QuestionIndex, is_json_object
from .errors import InvalidForm
from .js import WHITESPACE_RUN, is_blank, js_trim, js_upper_first
from .protocol import (
    AskOption,
    AskParams,
    AskQuestion,
    InvalidInputError,
    InvalidInputResult,
    Issue,
    QuestionType,
)

__all__ = [
    "Form",
    "check_structure",
    "derive_label",
    "parse_form",
    "parse_form_indexed",
    "prepare_labels",
]

_QUESTION_TYPES: Final[tuple[QuestionType, ...]] = typing.get_args(QuestionType)
_SEPARATOR_RUN: Final = re.compile(r"[_-]+")


class Form(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A validated, normalized form: what a ``started`` event announces."""

    title: str | UnsetType = UNSET
    questions: tuple[AskQuestion, ...]


# --- the input's JSON types (§2.1 step 2) ------------------------------------------------------
# A missing text is empty and a missing array has no items, as the §2.3 rules read them; a
# missing type is UNSET (no type issue) and a missing title is UNSET (an invalid result then
# has none). Field order is the order check_structure reports issues in.


class _InOption(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    value: str = ""
    label: str = ""
    description: str = ""
    preview: str = ""
    preview_file: str = ""
    recommended: bool | UnsetType = UNSET


class _InQuestion(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    id: str = ""
    label: str = ""
    prompt: str = ""
    type: str | UnsetType = UNSET
    required: bool = False
    options: list[_InOption] = []


class _InForm(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    title: str | UnsetType = UNSET
    background: bool | UnsetType = UNSET
    questions: list[_InQuestion] = []


@functools.cache
def _scalar_fields(struct: type[msgspec.Struct]) -> tuple[tuple[str, type], ...]:
    """(JSON key, Python type) of each text or boolean field of an input Struct, in order."""
    fields = []
    for field in msgspec.structs.fields(struct):
        members = typing.get_args(field.type) or (field.type,)  # (a union's, or the type)
        kinds = [kind for kind in members if kind is not UnsetType]
        if kinds in ([str], [bool]):
            fields.append((field.encode_name, kinds[0]))
    return tuple(fields)


@functools.cache
def _keys(struct: type[msgspec.Struct]) -> tuple[str, ...]:
    return tuple(field.encode_name for field in msgspec.structs.fields(struct))


# --- §2.2 label derivation ---------------------------------------------------------------------


def derive_label(value: str) -> str | None:
    """The label derived from an option value, or None when the value has no words."""
    words = js_trim(WHITESPACE_RUN.sub(" ", _SEPARATOR_RUN.sub(" ", value)))
    return js_upper_first(words) if words else None


def _prepared_label(label: object, value: object) -> object:
    """§2.2: a missing (UNSET) or blank label is derived from a string value that has words."""
    if label is UNSET or (isinstance(label, str) and is_blank(label)):
        derived = derive_label(value) if isinstance(value, str) else None
        if derived is not None:
            return derived
    return label


def prepare_labels(raw: object) -> object:
    """Return ``raw`` with derived labels filled in; the caller's objects are never mutated."""
    if not is_json_object(raw):
        return raw
    prepared = dict(raw)
    questions = prepared.get("questions")
    if not isinstance(questions, list):
        return prepared
    new_questions: list[object] = []
    for question in questions:
        if is_json_object(question) and isinstance(question.get("options"), list):
            question = dict(question)
            question["options"] = [_prepare_option(option) for option in question["options"]]
        new_questions.append(question)
    prepared["questions"] = new_questions
    return prepared


def _prepare_option(option: object) -> object:
    if not is_json_object(option):
        return option
    label = _prepared_label(option.get("label", UNSET), option.get("value"))
    if label is option.get("label", UNSET):
        return option
    return {**option, "label": label}


# --- structural check --------------------------------------------------------------------------


def _json_type(value: object) -> str:
    """The JSON type ``value`` has, or its Python type's name (a tuple or a set is not an
    array here: ``questions`` and ``options`` must be lists)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if is_json_object(value):
        return "object"
    return type(value).__name__


_EXPECTED: Final = {str: "a string", bool: "a boolean"}


def _check_fields(
    obj: Mapping[str, object], struct: type[msgspec.Struct], prefix: str
) -> list[Issue]:
    issues = []
    for key, expected in _scalar_fields(struct):
        if key in obj and not isinstance(obj[key], expected):
            issues.append(
                Issue(
                    path=f"{prefix}{key}",
                    message=f"{key} must be {_EXPECTED[expected]}, not {_json_type(obj[key])}",
                )
            )
    return issues


def check_structure(raw: object) -> list[Issue]:
    """Issues for present values of the wrong JSON type (spec §2.1 step 2)."""
    if not is_json_object(raw):
        return [Issue(path="$", message=f"ask_user input must be an object, not {_json_type(raw)}")]
    issues = _check_fields(raw, _InForm, "")
    questions = raw.get("questions", [])
    if not isinstance(questions, list):
        issues.append(
            Issue(
                path="questions", message=f"questions must be an array, not {_json_type(questions)}"
            )
        )
        return issues
    for i, question in enumerate(questions):
        qpath = f"questions[{i}]"
        if not is_json_object(question):
            issues.append(
                Issue(
                    path=qpath,
                    message=f"Question {i + 1} must be an object, not {_json_type(question)}",
                )
            )
            continue
        issues.extend(_check_fields(question, _InQuestion, f"{qpath}."))
        options = question.get("options", [])
        if not isinstance(options, list):
            issues.append(
                Issue(
                    path=f"{qpath}.options",
                    message=f"Question {i + 1}: options must be an array, "
                    f"not {_json_type(options)}",
                )
            )
            continue
        for j, option in enumerate(options):
            opath = f"{qpath}.options[{j}]"
            if not is_json_object(option):
                issues.append(
                    Issue(
                        path=opath,
                        message=f"Question {i + 1}, option {j + 1} must be an object, "
                        f"not {_json_type(option)}",
                    )
                )
                continue
            issues.extend(_check_fields(option, _InOption, f"{opath}."))
    return issues


def _typed_input(raw: object) -> _InForm:
    """``raw`` converted to the input Structs; raises ``InvalidForm`` (``schema_error``) with
    ``check_structure``'s issues when its JSON types are wrong."""
    # msgspec also converts tuples, sets and list subclasses to lists, which the structure check
    # refuses or copies: only arrays that are lists go to it directly (a routing test, not a
    # rule: whatever else it refuses is decided by check_structure below).
    questions = raw.get("questions") if type(raw) is dict else None
    if type(questions) is list and all(
        type(question) is dict and type(question.get("options")) is list for question in questions
    ):
        try:
            return msgspec.convert(raw, _InForm)
        except msgspec.ValidationError:
            pass
    issues = check_structure(raw)
    if issues:
        raise InvalidForm("schema_error", tuple(issues), None)
    # Well typed in a shape msgspec does not convert (another Mapping, a list subclass, a key
    # that is not a string, a missing array): the same values, in plain dicts and lists.
    return msgspec.convert(_plain_input(raw), _InForm)


def _plain_input(raw: object) -> dict[str, object]:
    """Structurally valid input as plain dicts and lists of the keys the Structs read."""

    def known(obj: object, struct: type[msgspec.Struct]) -> dict[str, object]:
        assert is_json_object(obj)  # (check_structure found no issue)
        return {key: obj[key] for key in _keys(struct) if key in obj}

    def items(obj: Mapping[str, object], key: str) -> list[object]:
        array = obj.get(key, [])
        assert isinstance(array, list)
        return array

    form = known(raw, _InForm)
    questions = [known(question, _InQuestion) for question in items(form, "questions")]
    for question in questions:
        question["options"] = [known(option, _InOption) for option in items(question, "options")]
    form["questions"] = questions
    return form


# --- §2.2-§2.4 in one walk ---------------------------------------------------------------------


def _is_question_type(value: object) -> TypeGuard[QuestionType]:
    return value in _QUESTION_TYPES


def _issue(field: str, text: str, i: int, j: int | None = None) -> Issue:
    """A §2.3 issue of question ``i`` (or of its option ``j``), with its path and place."""
    if j is None:
        return Issue(path=f"questions[{i}].{field}", message=f"Question {i + 1}: {text}")
    return Issue(
        path=f"questions[{i}].options[{j}].{field}",
        message=f"Question {i + 1}, option {j + 1}: {text}",
    )


_PreviewFile = tuple[int, int, str]  # question index, option index, trimmed file name


def _walk(
    form: _InForm, present_single_as_multi: bool
) -> tuple[list[AskQuestion], dict[str, QuestionIndex], list[Issue], list[_PreviewFile]]:
    """The normalized questions (§2.4; their options' previews from files still to be read),
    their answer-lookup tables (question id -> index, in form order), every §2.3 issue in the
    spec's order, and the preview files to read. The tables are the ids and values seen, so
    they are built on the way; with any issue they are meaningless (the form is refused)."""
    if not form.questions:
        issue = Issue(path="questions", message="At least one question is required")
        return [], {}, [issue], []
    normalized: list[AskQuestion] = []
    indexes: dict[str, QuestionIndex] = {}
    issues: list[Issue] = []
    files: list[_PreviewFile] = []
    for i, question in enumerate(form.questions):
        raw_type = question.type
        qtype: QuestionType = "single"
        if _is_question_type(raw_type):
            qtype = raw_type
        elif raw_type is not UNSET:
            shown = msgspec.json.encode(raw_type).decode()
            issues.append(
                _issue(
                    "type",
                    f'invalid type {shown}; expected "single", "multi", or "preview"',
                    i,
                )
            )
        qid = js_trim(question.id)
        if not qid:
            issues.append(_issue("id", "id is required", i))
        elif qid in indexes:
            issues.append(_issue("id", f'duplicate question id "{qid}"', i))
        prompt = js_trim(question.prompt)
        if not prompt:
            issues.append(_issue("prompt", "prompt is required", i))
        if not question.options:
            issues.append(_issue("options", "at least one option is required", i))
        options: list[AskOption] = []
        table: dict[str, tuple[str, int]] = {}  # QuestionIndex.table of the options
        for j, option in enumerate(question.options):
            value = js_trim(option.value)
            if not value:
                issues.append(_issue("value", "value is required", i, j))
            elif value in table:
                issues.append(_issue("value", f'duplicate option value "{value}"', i, j))
            label = _prepared_label(option.label, option.value)
            label = js_trim(label) if isinstance(label, str) else ""
            if not label:
                issues.append(_issue("label", "label is required", i, j))
            preview, file_name = js_trim(option.preview), js_trim(option.preview_file)
            if preview and file_name:
                issues.append(
                    _issue("previewFile", "use either preview or previewFile, not both", i, j)
                )
            if raw_type == "preview" and not preview and not file_name:
                issues.append(
                    _issue(
                        "preview",
                        "preview questions require preview text for every option; "
                        'add preview text or use type "single" instead',
                        i,
                        j,
                    )
                )
            if file_name:
                files.append((i, j, file_name))
            options.append(
                AskOption(
                    value=value,
                    label=label,
                    description=js_trim(option.description) or UNSET,
                    preview=preview or UNSET,
                    recommended=option.recommended,
                )
            )
            table[value] = (label, j + 1)
        presented_multi = present_single_as_multi and qtype == "single"
        presented: QuestionType = "multi" if presented_multi else qtype
        normalized.append(
            AskQuestion(
                id=qid,
                label=js_trim(question.label) or f"Q{i + 1}",
                prompt=prompt,
                type=presented,
                requested_type="single" if presented_multi else UNSET,
                presented_type="multi" if presented_multi else UNSET,
                required=question.required,
                options=options,
            )
        )
        indexes[qid] = QuestionIndex.of(qid, presented, table)
    return normalized, indexes, issues, files


# --- §2.5 preview files ------------------------------------------------------------------------


def _read_preview(path: str) -> str:
    """The text of a preview file; raises ``ValueError`` with the reason it cannot be used."""
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            raise ValueError("Expected a regular text file")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ValueError(error.strerror or str(error)) from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"Expected UTF-8 text: {error.reason} at byte {error.start}") from error
    if "\x00" in text:
        raise ValueError("Expected UTF-8 text, not binary data")
    if is_blank(text):
        raise ValueError("Preview file is empty")
    return text


def _with_preview_files(
    questions: list[AskQuestion], files: list[_PreviewFile], cwd: str | os.PathLike[str] | None
) -> list[Issue]:
    """Give each option with a preview file its text as ``preview`` (trimmed, as §2.4 trims
    every text), in place; the issues of the files that cannot be read (all are tried)."""
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    issues: list[Issue] = []
    for i, j, file_name in files:
        absolute = os.path.abspath(os.path.join(base, file_name))
        try:
            text = _read_preview(absolute)
        except ValueError as error:
            issues.append(
                Issue(
                    path=f"questions[{i}].options[{j}].previewFile",
                    message=f'Cannot load preview file "{absolute}": {error}',
                )
            )
        else:
            options = questions[i].options
            options[j] = msgspec.structs.replace(options[j], preview=js_trim(text))
    return issues


# --- the whole pipeline ------------------------------------------------------------------------


def _invalid_result(form: _InForm, issues: Sequence[Issue]) -> InvalidInputResult:
    return InvalidInputResult(title=form.title, error=InvalidInputError(issues=list(issues)))


def parse_form(
    params: object,
    *,
    present_single_as_multi: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> Form:
    """Validate and normalize ask_user input (a dict as decoded from JSON, or ``AskParams``).

    Args:
        params: The ``ask_user`` input.
        present_single_as_multi: Present single-choice questions as multi (the host option).
        cwd: Where relative ``previewFile`` paths are read from.

    Raises:
        InvalidForm: ``kind="schema_error"`` for wrong JSON types, else
            ``kind="invalid_input"`` with every §2.3 issue (or preview-file issue) and the
            tool result.
    """
    return parse_form_indexed(params, present_single_as_multi=present_single_as_multi, cwd=cwd)[0]


def parse_form_indexed(
    params: object,
    *,
    present_single_as_multi: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> tuple[Form, FormIndex]:
    """``parse_form``, and the form's answer-lookup tables (what a host checks submits with)."""
    raw = (
        msgspec.to_builtins(params)
        if type(params) is not dict and isinstance(params, AskParams)
        else params
    )
    typed = _typed_input(raw)
    questions, indexes, issues, files = _walk(typed, present_single_as_multi)
    if not issues and files:
        issues = _with_preview_files(questions, files, cwd)
    if issues:
        raise InvalidForm("invalid_input", tuple(issues), _invalid_result(typed, issues))
    title = js_trim(typed.title) if isinstance(typed.title, str) else ""
    form = Form(title=title or UNSET, questions=tuple(questions))
    return form, FormIndex.of(indexes)
