"""Artifacts derived from the wire Structs: JSON Schema, and the ``pi_ask_wire`` TypedDict stubs.

The Structs in ``protocol.py`` are the one source of truth. ``json_schema()`` is what
``pi-ask schema`` prints; ``typeddict_stub()`` renders ``stubs/pi_ask_wire/__init__.pyi``, and a
test keeps the committed stub equal to it (regenerate with ``python -m pi_ask_core.schema``).
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Final, Literal, get_args, get_origin

import msgspec
from msgspec import UnsetType

from . import protocol

__all__ = ["PAYLOADS", "STRUCTS", "json_schema", "typeddict_stub"]

# The channel payloads, in channel order, with the names they have in the JSON Schema.
PAYLOADS: Final = (
    protocol.StartedEvent,
    protocol.CompletedEvent,
    protocol.SubmitEvent,
    protocol.SubmitAck,
    protocol.SubmitRejection,
)
# Every wire Struct, dependencies first (the stub's class order).
STRUCTS: Final[tuple[type[msgspec.Struct], ...]] = (
    protocol.AskOption,
    protocol.AskQuestion,
    protocol.StartedEvent,
    protocol.AskQuestionSummary,
    protocol.AskResultAnswer,
    protocol.ContextOption,
    protocol.ElaborationQuestionContext,
    protocol.QuestionTarget,
    protocol.OptionTarget,
    protocol.ElaborationItem,
    protocol.AskElaborationPayload,
    protocol.QuestionState,
    protocol.AskContinuationPayload,
    protocol.AskResult,
    protocol.CompletedEvent,
    protocol.Issue,
    protocol.InvalidInputError,
    protocol.InvalidInputResult,
    protocol.RemoteAnswer,
    protocol.AnswerResponse,
    protocol.CancelResponse,
    protocol.SubmitEvent,
    protocol.SubmitAck,
    protocol.SubmitRejection,
    protocol.AskParamsOption,
    protocol.AskParamsQuestion,
    protocol.AskParams,
)


def json_schema() -> dict[str, object]:
    """JSON Schema (2020-12) of the four channels' payloads, with shared ``$defs``."""
    (schemas, components) = msgspec.json.schema_components(PAYLOADS, ref_template="#/$defs/{name}")
    # msgspec leaves a constant with a default (``version: Literal[1] = 1``, ``ok``) optional, but
    # the seed requires it in every payload (the TypedDict stubs agree).
    for struct in PAYLOADS:
        component = components[struct.__name__]
        properties = component["properties"]
        constants = [
            key
            for key, spec in properties.items()
            if len(spec.get("enum", ())) == 1 and "default" in spec
        ]
        for key in constants:
            del properties[key]["default"]
        component["required"] = [
            key for key in properties if key in constants or key in component["required"]
        ]
    submit_result = {"anyOf": [schemas[3], schemas[4]]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pi-agent-ask event payloads (protocol version 1)",
        "type": "object",
        "properties": {
            protocol.STARTED: schemas[0],
            protocol.COMPLETED: schemas[1],
            protocol.SUBMIT: schemas[2],
            protocol.SUBMIT_RESULT: submit_result,
        },
        "$defs": components,
    }


def _render(annotation: object) -> str:
    """A stub type expression for a Struct field annotation (``UnsetType`` already removed)."""
    if get_origin(annotation) is Annotated:
        roles = [m for m in annotation.__metadata__ if isinstance(m, protocol.WireRole)]  # type: ignore[attr-defined]
        return roles[0].name if roles else _render(get_args(annotation)[0])
    if annotation is str or annotation is bool or annotation is int or annotation is float:
        return typing.cast(type, annotation).__name__
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return annotation.__name__
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin is list:
        return f"list[{_render(args[0])}]"
    if origin is dict:
        return f"dict[{_render(args[0])}, {_render(args[1])}]"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_render(a) for a in args)
    raise TypeError(f"no stub rendering for {annotation!r}")


def _fields(struct: type[msgspec.Struct]) -> Iterator[tuple[str, str, bool]]:
    """(JSON key, stub type, required) for each field, the tag first as msgspec encodes it."""
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    if info.tag_field is not None:
        yield info.tag_field, f"Literal[{info.tag!r}]", True
    hints = typing.get_type_hints(struct, include_extras=True)
    for field in msgspec.structs.fields(struct):
        annotation = hints[field.name]
        args = get_args(annotation)
        optional = UnsetType in args
        if optional:
            kept = tuple(a for a in args if a is not UnsetType)
            annotation = kept[0] if len(kept) == 1 else typing.Union[kept]  # noqa: UP007
        yield field.encode_name, _render(annotation), not optional


def typeddict_stub() -> str:
    """The text of ``stubs/pi_ask_wire/__init__.pyi``: a TypedDict per wire Struct."""
    lines = [
        '"""TypedDicts of the raw JSON payloads of the pi-agent-ask protocol (version 1).',
        "",
        "Generated from pi_ask_core.protocol by `python -m pi_ask_core.schema`; do not edit.",
        "Keys that may be absent are NotRequired; they are never null. Option values and labels",
        "are distinct types (both str at run time): a label never type-checks as a value, nor as",
        "any str, and compares only with another label.",
        '"""',
        "",
        "from typing import Literal, NewType, final",
        "",
        "from typing_extensions import NotRequired, TypedDict",
        "",
        'OptionValue = NewType("OptionValue", str)',
        '"""An option value of a started form: what a bridge sends to select that option."""',
        "",
        "",
        "@final",
        "class Label:",
        '    """A label: display text only, never sent to select anything. A str at run time,',
        "    typed as display text: render it with an f-string or str(); it passes nowhere a str",
        '    or a value goes, and compares (under --strict-equality) only with another Label."""',
        "",
        "    def __format__(self, format_spec: str, /) -> str: ...",
        "",
    ]
    names = []
    for struct in STRUCTS:
        names.append(struct.__name__)
        lines += ["", f"class {struct.__name__}(TypedDict):"]
        doc = (struct.__doc__ or "").strip().splitlines()
        if doc:
            lines.append(f'    """{doc[0]}"""')
        for key, rendered, required in _fields(struct):
            lines.append(f"    {key}: {rendered if required else f'NotRequired[{rendered}]'}")
    lines += [
        "",
        "RemoteResponse = AnswerResponse | CancelResponse",
        "SubmitResultEvent = SubmitAck | SubmitRejection",
        "",
        "__all__ = [",
        *(
            f'    "{name}",'
            for name in sorted(
                [*names, "Label", "OptionValue", "RemoteResponse", "SubmitResultEvent"]
            )
        ),
        "]",
        "",
    ]
    return "\n".join(lines)


def _main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else Path("stubs/pi_ask_wire/__init__.pyi")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(typeddict_stub(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
