"""The TypedDict stubs and the JSON Schema stay in step with the wire Structs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_ask_core import protocol
from pi_ask_core.schema import STRUCTS, json_schema, typeddict_stub

STUB = Path(__file__).resolve().parents[2] / "stubs" / "pi_ask_wire" / "__init__.pyi"


def test_committed_stub_is_generated_from_the_structs() -> None:
    assert STUB.read_text(encoding="utf-8") == typeddict_stub(), (
        "stubs/pi_ask_wire is out of date: run `python -m pi_ask_core.schema`"
    )


def test_every_wire_struct_has_a_typeddict() -> None:
    wire = {
        obj
        for obj in vars(protocol).values()
        if isinstance(obj, type)
        and issubclass(obj, msgspec.Struct)
        and obj.__module__ == protocol.__name__
        and not obj.__name__.startswith("_")
    }
    assert wire == set(STRUCTS)


@pytest.mark.parametrize("struct", STRUCTS, ids=lambda s: s.__name__)
def test_stub_fields_match_struct_fields(struct: type[msgspec.Struct]) -> None:
    text = STUB.read_text(encoding="utf-8")
    body = text.split(f"class {struct.__name__}(TypedDict):\n", 1)[1].split("\n\n", 1)[0]
    keys = [
        line.strip().split(":", 1)[0]
        for line in body.splitlines()
        if ":" in line and not line.strip().startswith('"""')
    ]
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    expected = [info.tag_field] if info.tag_field else []
    expected += [f.encode_name for f in info.fields]
    assert keys == expected


# Facts written down from the seed (integration-events.md), not derived from the Structs:
# each payload's keys, which of them are required, and the values a key may take.
SEED_KEYS: dict[str, tuple[set[str], set[str]]] = {  # def: (required keys, optional keys)
    "StartedEvent": (
        {"version", "flowId", "source", "questions", "createdAt"},
        {"toolCallId", "title"},
    ),
    "CompletedEvent": (
        {"version", "flowId", "source", "result", "completedAt"},
        {"toolCallId"},
    ),
    "SubmitEvent": ({"version", "requestId", "flowId", "response"}, set()),
    "AnswerResponse": ({"kind", "answers"}, {"mode"}),
    "CancelResponse": ({"kind"}, set()),
    "RemoteAnswer": (set(), {"values", "customText", "note", "optionNotes"}),
    "SubmitAck": ({"version", "requestId", "flowId", "ok"}, set()),
    "SubmitRejection": ({"version", "requestId", "flowId", "ok", "error", "message"}, set()),
}
SEED_ENUMS: dict[tuple[str, str], set[object]] = {
    ("StartedEvent", "version"): {1},
    ("StartedEvent", "source"): {"tool", "ask:resume"},
    ("CompletedEvent", "version"): {1},
    ("CompletedEvent", "source"): {"tool", "ask:resume"},
    ("SubmitEvent", "version"): {1},
    ("AnswerResponse", "kind"): {"answer"},
    ("AnswerResponse", "mode"): {"submit", "elaborate"},
    ("CancelResponse", "kind"): {"cancel"},
    ("SubmitAck", "version"): {1},
    ("SubmitAck", "ok"): {True},
    ("SubmitRejection", "version"): {1},
    ("SubmitRejection", "ok"): {False},
    ("SubmitRejection", "error"): {"flow_not_found", "invalid_request", "invalid_answer"},
}
SEED_TYPES: dict[tuple[str, str], str] = {
    ("StartedEvent", "flowId"): "string",
    ("StartedEvent", "toolCallId"): "string",
    ("StartedEvent", "title"): "string",
    ("StartedEvent", "questions"): "array",
    ("StartedEvent", "createdAt"): "number",
    ("CompletedEvent", "flowId"): "string",
    ("CompletedEvent", "completedAt"): "number",
    ("SubmitEvent", "requestId"): "string",
    ("SubmitEvent", "flowId"): "string",
    ("AnswerResponse", "answers"): "object",
    ("RemoteAnswer", "values"): "array",
    ("RemoteAnswer", "customText"): "string",
    ("RemoteAnswer", "note"): "string",
    ("RemoteAnswer", "optionNotes"): "object",
    ("SubmitAck", "requestId"): "string",
    ("SubmitRejection", "message"): "string",
}


def _defs() -> dict[str, dict[str, Any]]:
    defs = json_schema()["$defs"]
    assert isinstance(defs, dict)
    return defs


def test_json_schema_has_one_entry_per_channel() -> None:
    schema = json_schema()
    assert schema["properties"] == {
        "pi-agent-ask:started": {"$ref": "#/$defs/StartedEvent"},
        "pi-agent-ask:completed": {"$ref": "#/$defs/CompletedEvent"},
        "pi-agent-ask:submit": {"$ref": "#/$defs/SubmitEvent"},
        "pi-agent-ask:submit-result": {
            "anyOf": [{"$ref": "#/$defs/SubmitAck"}, {"$ref": "#/$defs/SubmitRejection"}]
        },
    }
    response = _defs()["SubmitEvent"]["properties"]["response"]
    assert response["anyOf"] == [
        {"$ref": "#/$defs/AnswerResponse"},
        {"$ref": "#/$defs/CancelResponse"},
    ]


@pytest.mark.parametrize("name", SEED_KEYS)
def test_json_schema_keys_and_required_keys_are_the_seeds(name: str) -> None:
    required, optional = SEED_KEYS[name]
    definition = _defs()[name]
    assert set(definition["properties"]) == required | optional
    assert set(definition["required"]) == required


@pytest.mark.parametrize(("name", "key"), SEED_ENUMS)
def test_json_schema_enums_are_the_seeds(name: str, key: str) -> None:
    spec = _defs()[name]["properties"][key]
    assert set(spec["enum"]) == SEED_ENUMS[name, key]


@pytest.mark.parametrize(("name", "key"), SEED_TYPES)
def test_json_schema_types_are_the_seeds(name: str, key: str) -> None:
    spec = _defs()[name]["properties"][key]
    types = {option["type"] for option in spec.get("anyOf", [spec])}
    # a JSON number may be written as an integer; "number" alone or with "integer" both accept it
    assert types - {"integer"} == {SEED_TYPES[name, key]}


@pytest.mark.parametrize("name", SEED_KEYS)
def test_required_keys_carry_no_default(name: str) -> None:
    definition = _defs()[name]
    defaults = {key for key, spec in definition["properties"].items() if "default" in spec}
    assert defaults & set(definition["required"]) == set()


def test_answer_values_and_option_notes_hold_strings() -> None:
    remote = _defs()["RemoteAnswer"]["properties"]
    assert remote["values"]["items"] == {"type": "string"}
    assert remote["optionNotes"]["additionalProperties"] == {"type": "string"}
