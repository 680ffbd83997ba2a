"""ask_user input -> normalized form (spec §2).

Pipeline: label derivation (§2.2) on a copy of the input, a structural check of JSON types,
the semantic rules of §2.3 (all issues collected, exact paths), preview files (§2.5), then
normalization (§2.4).

Decision on the structural check (spec A30): a key that is *missing* is treated as empty, so
the semantic rules report it with their own path (``value is required``, as in the spec's
example V3); a key that is *present with the wrong JSON type* (``null`` included) is a
``schema_error``, which Pi's tool schema would have refused before the extension ran.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec
from msgspec import UNSET, UnsetType

from .answers import FormIndex, _is_object
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
    "load_preview_files",
    "normalize_form",
    "parse_form",
    "parse_form_indexed",
    "prepare_labels",
    "validate_form",
]

_QUESTION_TYPES: Final[tuple[QuestionType, ...]] = ("single", "multi", "preview")
_SEPARATOR_RUN: Final = re.compile(r"[_-]+")

_TOP_FIELDS: Final = (("title", str), ("background", bool))
_QUESTION_FIELDS: Final = (
    ("id", str),
    ("label", str),
    ("prompt", str),
    ("type", str),
    ("required", bool),
)
_OPTION_FIELDS: Final = (
    ("value", str),
    ("label", str),
    ("description", str),
    ("preview", str),
    ("previewFile", str),
    ("recommended", bool),
)


class Form(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A validated, normalized form: what a ``started`` event announces."""

    title: str | UnsetType = UNSET
    questions: tuple[AskQuestion, ...]


# --- §2.2 label derivation ---------------------------------------------------------------------


def derive_label(value: str) -> str | None:
    """The label derived from an option value, or None when the value has no words."""
    words = js_trim(WHITESPACE_RUN.sub(" ", _SEPARATOR_RUN.sub(" ", value)))
    return js_upper_first(words) if words else None


def prepare_labels(raw: object) -> object:
    """Return ``raw`` with derived labels filled in; the caller's objects are never mutated."""
    if not _is_object(raw):
        return raw
    prepared = dict(raw)
    questions = prepared.get("questions")
    if not isinstance(questions, list):
        return prepared
    new_questions: list[object] = []
    for question in questions:
        if _is_object(question) and isinstance(question.get("options"), list):
            question = dict(question)
            question["options"] = [_prepare_option(option) for option in question["options"]]
        new_questions.append(question)
    prepared["questions"] = new_questions
    return prepared


def _prepare_option(option: object) -> object:
    if not _is_object(option):
        return option
    label = option.get("label", UNSET)
    value = option.get("value")
    needs_label = label is UNSET or (isinstance(label, str) and is_blank(label))
    if not needs_label or not isinstance(value, str):
        return option
    derived = derive_label(value)
    if derived is None:
        return option
    prepared = dict(option)
    prepared["label"] = derived
    return prepared


# --- structural check --------------------------------------------------------------------------


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if _is_object(value):
        return "object"
    return type(value).__name__


_EXPECTED: Final = {str: "a string", bool: "a boolean"}


def _check_fields(
    obj: Mapping[str, object], fields: tuple[tuple[str, type], ...], prefix: str
) -> list[Issue]:
    issues = []
    for key, expected in fields:
        if key in obj and not isinstance(obj[key], expected):
            issues.append(
                Issue(
                    path=f"{prefix}{key}",
                    message=f"{key} must be {_EXPECTED[expected]}, not {_json_type(obj[key])}",
                )
            )
    return issues


def check_structure(prepared: object) -> list[Issue]:
    """Issues for present values of the wrong JSON type (spec §2.1 step 2)."""
    if not _is_object(prepared):
        return [
            Issue(path="$", message=f"ask_user input must be an object, not {_json_type(prepared)}")
        ]
    issues = _check_fields(prepared, _TOP_FIELDS, "")
    questions = prepared.get("questions", [])
    if not isinstance(questions, list):
        issues.append(
            Issue(
                path="questions", message=f"questions must be an array, not {_json_type(questions)}"
            )
        )
        return issues
    for i, question in enumerate(questions):
        qpath = f"questions[{i}]"
        if not _is_object(question):
            issues.append(
                Issue(
                    path=qpath,
                    message=f"Question {i + 1} must be an object, not {_json_type(question)}",
                )
            )
            continue
        issues.extend(_check_fields(question, _QUESTION_FIELDS, f"{qpath}."))
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
            if not _is_object(option):
                issues.append(
                    Issue(
                        path=opath,
                        message=f"Question {i + 1}, option {j + 1} must be an object, "
                        f"not {_json_type(option)}",
                    )
                )
                continue
            issues.extend(_check_fields(option, _OPTION_FIELDS, f"{opath}."))
    return issues


# --- §2.3 semantic rules -----------------------------------------------------------------------


def _text(obj: Mapping[str, object], key: str) -> str:
    """The trimmed string at ``key``; missing counts as empty (structure is checked first)."""
    value = obj.get(key)
    return js_trim(value) if isinstance(value, str) else ""


def validate_form(prepared: Mapping[str, object]) -> list[Issue]:
    """Every §2.3 issue of a structurally valid, label-prepared input, in the spec's order."""
    questions = prepared.get("questions", [])
    assert isinstance(questions, list)
    if not questions:
        return [Issue(path="questions", message="At least one question is required")]
    issues: list[Issue] = []
    seen_ids: set[str] = set()
    for i, question in enumerate(questions):
        n, qpath = i + 1, f"questions[{i}]"
        raw_type = question.get("type", UNSET)
        if raw_type is not UNSET and raw_type not in _QUESTION_TYPES:
            issues.append(
                Issue(
                    path=f"{qpath}.type",
                    message=f"Question {n}: invalid type {msgspec.json.encode(raw_type).decode()}; "
                    'expected "single", "multi", or "preview"',
                )
            )
        qid = _text(question, "id")
        if not qid:
            issues.append(Issue(path=f"{qpath}.id", message=f"Question {n}: id is required"))
        elif qid in seen_ids:
            issues.append(
                Issue(path=f"{qpath}.id", message=f'Question {n}: duplicate question id "{qid}"')
            )
        else:
            seen_ids.add(qid)
        if not _text(question, "prompt"):
            issues.append(
                Issue(path=f"{qpath}.prompt", message=f"Question {n}: prompt is required")
            )
        options = question.get("options", [])
        if not options:
            issues.append(
                Issue(
                    path=f"{qpath}.options",
                    message=f"Question {n}: at least one option is required",
                )
            )
        is_preview = raw_type == "preview"
        seen_values: set[str] = set()
        for j, option in enumerate(options):
            where, opath = f"Question {n}, option {j + 1}", f"{qpath}.options[{j}]"
            value = _text(option, "value")
            if not value:
                issues.append(Issue(path=f"{opath}.value", message=f"{where}: value is required"))
            elif value in seen_values:
                issues.append(
                    Issue(
                        path=f"{opath}.value", message=f'{where}: duplicate option value "{value}"'
                    )
                )
            else:
                seen_values.add(value)
            if not _text(option, "label"):
                issues.append(Issue(path=f"{opath}.label", message=f"{where}: label is required"))
            has_preview = bool(_text(option, "preview"))
            has_file = bool(_text(option, "previewFile"))
            if has_preview and has_file:
                issues.append(
                    Issue(
                        path=f"{opath}.previewFile",
                        message=f"{where}: use either preview or previewFile, not both",
                    )
                )
            if is_preview and not has_preview and not has_file:
                issues.append(
                    Issue(
                        path=f"{opath}.preview",
                        message=f"{where}: preview questions require preview text for every "
                        'option; add preview text or use type "single" instead',
                    )
                )
    return issues


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


def load_preview_files(
    prepared: Mapping[str, object], cwd: str | os.PathLike[str] | None = None
) -> tuple[Mapping[str, object], list[Issue]]:
    """Replace every non-blank ``previewFile`` by its text as ``preview`` (all files are tried)."""
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    questions = prepared.get("questions", [])
    assert isinstance(questions, list)
    issues: list[Issue] = []
    new_questions: list[object] = []
    changed = False
    for i, question in enumerate(questions):
        options = question.get("options", [])
        new_options = []
        for j, option in enumerate(options):
            file_name = _text(option, "previewFile")
            if file_name:
                changed = True
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
                    option = {k: v for k, v in option.items() if k != "previewFile"}
                    option["preview"] = text
            new_options.append(option)
        new_questions.append({**question, "options": new_options})
    if not changed:
        return prepared, issues
    return {**prepared, "questions": new_questions}, issues


# --- §2.4 normalization ------------------------------------------------------------------------


def _optional_text(obj: Mapping[str, object], key: str) -> str | UnsetType:
    text = _text(obj, key)
    return text if text else UNSET


def _normalize_option(option: Mapping[str, object]) -> AskOption:
    recommended = option.get("recommended", UNSET)
    return AskOption(
        value=_text(option, "value"),
        label=_text(option, "label"),
        description=_optional_text(option, "description"),
        preview=_optional_text(option, "preview"),
        preview_file=_optional_text(option, "previewFile"),
        recommended=recommended if isinstance(recommended, bool) else UNSET,
    )


def normalize_form(
    prepared: Mapping[str, object], *, present_single_as_multi: bool = False
) -> Form:
    """Normalized questions and title of a valid, label-prepared input (§2.4)."""
    questions = prepared.get("questions", [])
    assert isinstance(questions, list)
    normalized = []
    for i, question in enumerate(questions):
        raw_type = question.get("type", "single")
        qtype: QuestionType = raw_type if raw_type in _QUESTION_TYPES else "single"
        required = question.get("required", False)
        presented: dict[str, QuestionType] = {}
        if present_single_as_multi and qtype == "single":
            presented = {"type": "multi", "requested_type": "single", "presented_type": "multi"}
        normalized.append(
            AskQuestion(
                id=_text(question, "id"),
                label=_text(question, "label") or f"Q{i + 1}",
                prompt=_text(question, "prompt"),
                type=presented.get("type", qtype),
                requested_type=presented.get("requested_type", UNSET),
                presented_type=presented.get("presented_type", UNSET),
                required=required if isinstance(required, bool) else False,
                options=[_normalize_option(o) for o in question.get("options", [])],
            )
        )
    return Form(title=_optional_text(prepared, "title"), questions=tuple(normalized))


# --- the whole pipeline ------------------------------------------------------------------------


def _invalid_result(raw: Mapping[str, object], issues: Sequence[Issue]) -> InvalidInputResult:
    title = raw.get("title", UNSET)
    return InvalidInputResult(
        title=title if isinstance(title, str) else UNSET,
        error=InvalidInputError(issues=list(issues)),
    )


def parse_form(
    params: object,
    *,
    present_single_as_multi: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> Form:
    """Validate and normalize ask_user input (a dict as decoded from JSON, or ``AskParams``).

    Raises ``InvalidForm``: ``kind="schema_error"`` for wrong JSON types, else
    ``kind="invalid_input"`` with every §2.3 issue (or preview-file issue) and the tool result.
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
    prepared = prepare_labels(raw)
    structure = check_structure(prepared)
    if structure:
        raise InvalidForm("schema_error", tuple(structure), None)
    assert isinstance(prepared, Mapping)
    issues = validate_form(prepared)
    if not issues:
        prepared, issues = load_preview_files(prepared, cwd)
    if issues:
        raise InvalidForm("invalid_input", tuple(issues), _invalid_result(prepared, issues))
    form = normalize_form(prepared, present_single_as_multi=present_single_as_multi)
    return form, FormIndex(form.questions)
