"""Internal: the host's text hygiene. What the host emits is valid UTF-8 JSON, and where a rule
compares submitted text with a form's (valid) text, text that is not valid is compared as its
cleaned copy: lone surrogates become U+FFFD and a surrogate pair the character it encodes, as
the relay's decoder does for Pi's ``"\\ud83d"`` escapes, and a ``str`` subclass becomes a
plain ``str``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import msgspec

__all__ = ["ENCODER", "clean_copy", "clean_text", "is_plain", "valid_struct"]

ENCODER = msgspec.json.Encoder()
"""The host's JSON encoder: the proof that a value encodes, and the check of a built result."""

_S = TypeVar("_S", bound=msgspec.Struct)


def clean_text(text: str) -> str:
    """``text`` as a plain ``str`` of valid UTF-8 text (lone surrogates replaced, pairs joined)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_plain(text: object) -> bool:
    """Whether ``text`` is a plain ``str`` (msgspec does not encode a subclass) that is valid
    UTF-8 text (holds no lone surrogate)."""
    if type(text) is not str:
        return False
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def clean_copy(value: object) -> tuple[object, bool]:
    """``value`` and ``True`` when it encodes as JSON as it is (then so does everything built
    from it); else a copy with its text cleaned (Mappings become dicts, what is not text is
    left as it was) and ``False``; ``value`` itself and ``False`` when it holds a Mapping that
    cannot be read whole.

    The proof is one encode: it fails only on a lone surrogate or a ``str`` subclass, on too
    deep a value, or on what msgspec does not encode (another Mapping than a dict, say a
    ``MappingProxyType``, or a Python object).

    Raises:
        RecursionError: ``value`` is nested too deeply to copy.
    """
    try:
        ENCODER.encode(value)
    except Exception:  # a RecursionError, a lone surrogate, a str subclass, ...
        pass
    else:
        return value, True
    try:
        return _scrub(value), False
    except RecursionError:
        raise
    except Exception:  # a Mapping whose items() raises, say
        return value, False


def valid_struct(value: _S) -> tuple[_S, bool]:
    """``value`` and ``True`` when it encodes as JSON; else its copy with every text cleaned
    and ``False`` (a Struct the host built from submitted text, say an accepted answer)."""
    try:
        ENCODER.encode(value)
    except Exception:  # a lone surrogate, a str subclass
        return msgspec.convert(_fields(value), type(value)), False
    return value, True


def _scrub(value: object) -> object:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, Mapping):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, tuple):  # kept a tuple: cleaning must not make it pass for an array
        return tuple([_scrub(item) for item in value])
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


def _fields(value: object) -> object:
    """A Struct as builtins by field name (``to_builtins`` refuses a ``str`` subclass), its
    texts cleaned."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, msgspec.Struct):
        return {name: _fields(getattr(value, name)) for name in value.__struct_fields__}
    if isinstance(value, Mapping):
        return {_fields(k): _fields(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_fields(item) for item in value]
    return value
