"""The TypedDict stubs and the JSON Schema stay in step with the wire Structs."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from pi_ask_core import protocol
from pi_ask_core.schema import PAYLOADS, STRUCTS, json_schema, typeddict_stub

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


def test_json_schema_describes_every_channel_and_struct() -> None:
    schema = json_schema()
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert set(properties) == set(protocol.CHANNELS)
    defs = schema["$defs"]
    assert isinstance(defs, dict)
    for struct in PAYLOADS:
        properties = defs[struct.__name__]["properties"]
        info = msgspec.inspect.type_info(struct)
        assert isinstance(info, msgspec.inspect.StructType)
        assert set(properties) == {f.encode_name for f in info.fields}
        required = {f.encode_name for f in info.fields if f.required}
        assert set(defs[struct.__name__].get("required", [])) == required
