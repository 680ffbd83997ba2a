"""JavaScript semantics the reference host relies on (spec Appendix A).

Python's ``str.strip`` and ``re`` ``\\s`` use a different character set than JavaScript's
``trim()`` and ``\\s``, and Python dicts do not order integer-like keys first as JavaScript
objects do. Every trim, blank test and dynamic-key object in the core goes through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, TypeVar

__all__ = ["JS_WHITESPACE", "is_blank", "js_object", "js_ordered_keys", "js_trim", "js_upper_first"]

# U+0009-U+000D, space, NBSP, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, BOM.
JS_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS_CLASS: Final = "[" + re.escape(JS_WHITESPACE) + "]"
WHITESPACE_RUN: Final = re.compile(_WS_CLASS + "+")
_ARRAY_INDEX_MAX: Final = 2**32 - 2

K = TypeVar("K")
V = TypeVar("V")


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def is_blank(text: str) -> bool:
    """True when ``text`` is empty after JavaScript trimming."""
    return not text.strip(JS_WHITESPACE)


def js_upper_first(text: str) -> str:
    """``text.charAt(0).toUpperCase() + text.slice(1)`` on UTF-16 code units.

    A first character outside the BMP is half of a surrogate pair in JavaScript, which
    ``toUpperCase`` leaves unchanged.
    """
    if not text or ord(text[0]) > 0xFFFF:
        return text
    return text[0].upper() + text[1:]


def _array_index(key: object) -> int | None:
    # Canonical array index: decimal digits, no sign, no leading zero (except "0" itself).
    if (
        not isinstance(key, str)
        or not key.isascii()
        or not key.isdigit()
        or (len(key) > 1 and key[0] == "0")
    ):
        return None
    number = int(key)
    return number if number <= _ARRAY_INDEX_MAX else None


def js_ordered_keys(keys: Iterable[K]) -> list[K]:
    """Keys in JavaScript property order: array indices ascending, then insertion order."""
    keys = list(keys)
    for key in keys:
        if isinstance(key, str) and key[:1].isdigit():
            break
    else:
        return keys  # the common case: no key can be an array index
    indexed: list[tuple[int, K]] = []
    named: list[K] = []
    for key in keys:
        index = _array_index(key)
        if index is None:
            named.append(key)
        else:
            indexed.append((index, key))
    if not indexed:
        return named
    indexed.sort(key=lambda pair: pair[0])
    return [key for _, key in indexed] + named


def js_object(items: Iterable[tuple[str, V]]) -> dict[str, V]:
    """Build a dict whose iteration order is what a JavaScript object built the same way has."""
    built = dict(items)
    for key in built:
        if key[:1].isdigit():
            break
    else:
        return built
    return {key: built[key] for key in js_ordered_keys(built)}
