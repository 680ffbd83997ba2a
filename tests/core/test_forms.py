"""ask_user input rules (spec §2) beyond the worked examples."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_ask_core import AskParams, FlowHost, InvalidForm, LocalEventBus
from pi_ask_core.answers import QuestionIndex
from pi_ask_core.forms import derive_label, parse_form, parse_form_indexed, prepare_labels
from pi_ask_core.js import is_blank, js_object, js_ordered_keys, js_trim, js_upper_first


def form(*options: dict[str, Any], qtype: str | None = None, **question: Any) -> dict[str, Any]:
    q: dict[str, Any] = {"id": "q", "prompt": "Pick", "options": list(options), **question}
    if qtype is not None:
        q["type"] = qtype
    return {"questions": [q]}


def issue_paths(params: object, **kwargs: Any) -> list[str]:
    with pytest.raises(InvalidForm) as caught:
        parse_form(params, **kwargs)
    return [issue.path for issue in caught.value.issues]


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("follow_up", "Follow up"),
        ("region-local--kms", "Region local kms"),
        ("__", None),
        (" tab\tsep ", "Tab sep"),
        ("ß-weg", "SS weg"),
        ("\U0001d49c_x", "\U0001d49c x"),  # outside the BMP: left as it is
        ("a\u3000\u3000b", "A b"),
        ("\u0085x", "\u0085x"),  # U+0085 is not JavaScript whitespace
    ],
)
def test_label_derivation(value: str, label: str | None) -> None:
    assert derive_label(value) == label


def test_labels_are_prepared_on_a_copy() -> None:
    raw = form({"value": "follow_up"}, {"value": "b", "label": "  "}, {"value": "c", "label": None})
    prepared = prepare_labels(raw)
    assert isinstance(prepared, dict)
    assert [o.get("label") for o in prepared["questions"][0]["options"]] == ["Follow up", "B", None]
    assert "label" not in raw["questions"][0]["options"][0]


def test_js_trim_uses_the_javascript_whitespace_set() -> None:
    assert js_trim("\ufeff a \u2028") == "a"
    assert js_trim("\x1c a \x85") == "\x1c a \x85"  # Python's strip() would remove these
    assert is_blank("\u00a0\u3000")
    assert not is_blank("\x1f")


def test_js_key_order() -> None:
    assert js_ordered_keys(["b", "10", "a", "2", "01", "-1", "4294967295", "4294967294"]) == [
        "2",
        "10",
        "4294967294",
        "b",
        "a",
        "01",
        "-1",
        "4294967295",
    ]
    assert list(js_object([("x", 1), ("1", 2), ("x", 3)])) == ["1", "x"]
    assert js_object([("x", 1), ("x", 3)]) == {"x": 3}
    assert js_upper_first("ßa") == "SSa"


def test_normalization_and_defaults() -> None:
    parsed = parse_form(
        {
            "title": "  T  ",
            "background": True,
            "questions": [
                {
                    "id": " a ",
                    "prompt": " p ",
                    "label": " L ",
                    "required": True,
                    "type": "multi",
                    "unknown": 1,
                    "options": [
                        {
                            "value": " v ",
                            "label": " l ",
                            "description": " ",
                            "preview": " x ",
                            "recommended": False,
                            "freeform": True,
                        },
                    ],
                },
                {"id": "b", "prompt": "p", "options": [{"value": "v", "label": "l"}]},
            ],
        }
    )
    assert parsed.title == "T"
    wire = msgspec.to_builtins(list(parsed.questions))
    assert wire == [
        {
            "id": "a",
            "label": "L",
            "prompt": "p",
            "type": "multi",
            "required": True,
            "options": [{"value": "v", "label": "l", "preview": "x", "recommended": False}],
        },
        {
            "id": "b",
            "label": "Q2",
            "prompt": "p",
            "type": "single",
            "required": False,
            "options": [{"value": "v", "label": "l"}],
        },
    ]


def test_present_single_as_multi_only_changes_single() -> None:
    params = {
        "questions": [
            {"id": "s", "prompt": "p", "options": [{"value": "v", "label": "l"}]},
            {"id": "m", "prompt": "p", "type": "multi", "options": [{"value": "v", "label": "l"}]},
            {
                "id": "p",
                "prompt": "p",
                "type": "preview",
                "options": [{"value": "v", "label": "l", "preview": "x"}],
            },
        ]
    }
    questions = parse_form(params, present_single_as_multi=True).questions
    assert [(q.type, q.requested_type, q.presented_type) for q in questions] == [
        ("multi", "single", "multi"),
        ("multi", msgspec.UNSET, msgspec.UNSET),
        ("preview", msgspec.UNSET, msgspec.UNSET),
    ]


def test_typed_params_struct_is_accepted() -> None:
    params = msgspec.convert(form({"value": "yes_please"}), AskParams)
    assert parse_form(params).questions[0].options[0].label == "Yes please"


@pytest.mark.parametrize(
    ("params", "paths"),
    [
        ([], ["$"]),
        ({"questions": "x"}, ["questions"]),
        ({"title": 3, "questions": [7]}, ["title", "questions[0]"]),
        (form({"value": "v", "label": 5}), ["questions[0].options[0].label"]),
        (form({"value": None, "label": "l"}), ["questions[0].options[0].value"]),
        (
            form({"value": "v", "label": "l", "recommended": "yes"}),
            ["questions[0].options[0].recommended"],
        ),
        (
            {"questions": [{"id": 1, "prompt": [], "options": {}}]},
            ["questions[0].id", "questions[0].prompt", "questions[0].options"],
        ),
        (form({"value": "v", "label": "l"}, qtype=None, required="no"), ["questions[0].required"]),
    ],
)
def test_wrong_json_types_are_schema_errors(params: object, paths: list[str]) -> None:
    with pytest.raises(InvalidForm) as caught:
        parse_form(params)
    assert caught.value.kind == "schema_error"
    assert caught.value.code == "schema_error"
    assert caught.value.result is None
    assert [issue.path for issue in caught.value.issues] == paths


class _ReadOnly(Mapping[str, object]):
    """A Mapping that is not a dict (what a Python caller may pass)."""

    def __init__(self, data: dict[str, object]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class _Questions(list[object]):
    pass


def test_arrays_that_are_not_lists_are_schema_errors() -> None:
    # msgspec converts tuples and sets to lists; the structure check names them
    option = {"value": "v", "label": "l"}
    assert issue_paths({"questions": ({"id": "q", "prompt": "p", "options": [option]},)}) == [
        "questions"
    ]
    assert issue_paths({"questions": [{"options": frozenset()}]}) == ["questions[0].options"]


def test_a_tuple_where_an_array_belongs_is_named_as_a_tuple() -> None:
    option = {"value": "v", "label": "l"}
    with pytest.raises(InvalidForm) as refused:
        parse_form({"questions": ({"id": "q", "prompt": "p", "options": [option]},)})
    assert refused.value.issues[0].message == "questions must be an array, not tuple"
    with pytest.raises(InvalidForm) as refused:
        parse_form({"questions": [{"id": "q", "prompt": "p", "options": (option,)}]})
    assert refused.value.issues[0].message == "Question 1: options must be an array, not tuple"


def test_a_tuple_is_refused_by_the_host_whether_or_not_its_texts_need_cleaning() -> None:
    # The host cleans lone surrogates out of the input before the rules see it; the cleaned copy
    # must be refused for the same tuple as the clean input is.
    host = FlowHost(LocalEventBus())
    for label in ("A", "A\ud800"):
        question = {"id": "q", "label": label, "prompt": "p", "options": [{"value": "v"}]}
        with pytest.raises(InvalidForm) as refused:
            host.start({"questions": (question,)})
        assert refused.value.issues[0].message == "questions must be an array, not tuple"
    assert host.active_flows == ()


def test_well_typed_input_of_other_shapes_gives_the_same_form() -> None:
    plain = {**form({"value": "v", "label": " L ", "recommended": True}, label="Q"), "title": " T"}
    expected = parse_form(plain)
    question = plain["questions"][0]
    option = question["options"][0]
    shapes: list[object] = [
        _ReadOnly(plain),
        {"title": " T", "questions": _Questions([question])},
        {"title": " T", "questions": [{**question, "options": [_ReadOnly(option)]}]},
        {"title": " T", "questions": [{**question, 7: "ignored"}], 8: None},  # non-string keys
        {"title": " T", "questions": [_ReadOnly(question)]},
    ]
    for shape in shapes:
        assert parse_form(shape) == expected
    assert expected.title == "T"
    assert expected.questions[0].options[0].label == "L"


def test_missing_keys_are_reported_by_the_semantic_rules() -> None:
    assert issue_paths({}) == ["questions"]
    assert issue_paths({"questions": [{}]}) == [
        "questions[0].id",
        "questions[0].prompt",
        "questions[0].options",
    ]


def test_invalid_type_counts_as_single_for_previews() -> None:
    assert issue_paths(form({"value": "v", "label": "l"}, qtype="grid")) == ["questions[0].type"]


def test_preview_files_are_loaded_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("  layout A\n", encoding="utf-8")
    params = form(
        {"value": "a", "label": "A", "previewFile": " a.txt "},
        {"value": "b", "label": "B", "preview": "inline"},
        qtype="preview",
    )
    parsed = parse_form(params, cwd=tmp_path)
    options = parsed.questions[0].options
    assert options[0].preview == "layout A"
    assert options[0].preview_file is msgspec.UNSET
    assert options[1].preview == "inline"


def test_every_failing_preview_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "blank.txt").write_text(" \n\t", encoding="utf-8")
    (tmp_path / "bin.txt").write_bytes(b"a\x00b")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9")
    (tmp_path / "dir").mkdir()
    names = ["blank.txt", "bin.txt", "latin.txt", "dir", "missing.txt"]
    params = form(*({"value": n, "label": n, "previewFile": n} for n in names))
    with pytest.raises(InvalidForm) as caught:
        parse_form(params, cwd=tmp_path)
    error = caught.value
    assert error.kind == "invalid_input"
    assert [i.path for i in error.issues] == [
        f"questions[0].options[{j}].previewFile" for j in range(5)
    ]
    messages = [i.message for i in error.issues]
    for name, message in zip(names, messages, strict=True):
        assert message.startswith(f'Cannot load preview file "{tmp_path / name}": ')
    assert "empty" in messages[0]
    assert "binary" in messages[1]
    assert "UTF-8" in messages[2]
    assert "regular" in messages[3]
    assert error.result is not None


def test_preview_files_are_not_read_when_the_form_is_invalid(tmp_path: Path) -> None:
    params = form({"value": "", "label": "A", "previewFile": "missing.txt"})
    assert issue_paths(params, cwd=tmp_path) == ["questions[0].options[0].value"]


def test_invalid_input_result_echoes_the_raw_title() -> None:
    with pytest.raises(InvalidForm) as caught:
        parse_form({"title": "  ", "questions": []})
    assert caught.value.result is not None
    assert msgspec.to_builtins(caught.value.result)["title"] == "  "


def test_the_answer_tables_are_those_of_the_normalized_form(tmp_path: Path) -> None:
    # The walk builds them on the way; a submit is checked against exactly the form announced
    # (presented types, derived and trimmed labels, 1-based positions; previews from files aside).
    (tmp_path / "p.md").write_text("from a file", encoding="utf-8")
    params = {
        "questions": [
            {"id": " a ", "prompt": "A", "options": [{"value": "x_y"}, {"value": " z "}]},
            {
                "id": "b",
                "prompt": "B",
                "type": "multi",
                "options": [{"value": "v", "label": " V ", "previewFile": "p.md"}],
            },
        ]
    }
    form, index = parse_form_indexed(params, present_single_as_multi=True, cwd=tmp_path)
    assert list(index.questions) == [question.id for question in form.questions] == ["a", "b"]
    for question in form.questions:
        table = index.questions[question.id]
        assert (table.id, table.type, table.multi) == (question.id, question.type, True)
        assert table.options == QuestionIndex.table(question.options)
    assert index.questions["a"].options == {"x_y": ("X y", 1), "z": ("Z", 2)}
