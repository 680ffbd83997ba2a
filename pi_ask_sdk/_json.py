"""Decoded JSON as a type: what ``to_builtins``, ``to_data`` and ``FakeHost``'s records hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = (
    str | int | float | bool | Sequence["JsonValue"] | Mapping[str, "JsonValue"] | None
)
"""Decoded JSON: what ``json.loads`` or ``msgspec.to_builtins`` of a payload gives (read-only
container types, so a ``list[str]`` is one)."""
JsonObject: TypeAlias = dict[str, JsonValue]
"""A decoded JSON object."""
