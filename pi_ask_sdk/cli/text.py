"""Terminal-safe text: form text is untrusted, so what ``pi-ask`` prints is made inert first.

A form's title, prompts, labels, values, previews, notes and the host's messages come from
whatever process opened the form. Printed raw, an escape sequence in them could recolour or
clear the terminal, move the cursor over earlier lines, set the window title or a clipboard
(OSC 52), and bidi overrides could make ``yes`` read as ``on``. ``clean`` shows every such
character visibly as its JSON escape (``visible``: ``\\uXXXX``, ``\\t``, ``\\n`` ...): C0 and
C1 controls (ESC included, so an escape sequence prints as harmless text), DEL, bidi controls,
invisible zero-width characters and lone surrogates (which cannot be printed as UTF-8). Two
values that differ only by such a character therefore never look the same, and ``json_line``
writes them the same way.
Everything else, including every script, emoji and combining mark, stays as it is.

``width`` is the number of terminal cells a string takes (wide East Asian characters and emoji
take two, combining marks and zero-width characters none), from ``unicodedata`` only, and
``pad`` aligns by it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import unicodedata
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    from pi_ask_sdk.forms import DisplayText

__all__ = ["clean", "echo", "emit", "json_line", "pad", "visible", "width"]

_BIDI: Final = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# Invisible, with no part in how any script or emoji is drawn (unlike ZWJ or variation selectors).
_INVISIBLE: Final = "\u200b\u2060\ufeff"
# What json.dumps(ensure_ascii=False) leaves raw of what clean() shows (it escapes C0 itself).
_SHOWN_BEYOND_C0: Final = "\x7f-\x9f" + _BIDI + _INVISIBLE + "\u2028\u2029\ud800-\udfff"
_SHOWN: Final = re.compile(f"[\x00-\x1f{_SHOWN_BEYOND_C0}]")
_JSON_SHOWN: Final = re.compile(f"[{_SHOWN_BEYOND_C0}]")
# In multiline text a line break stays one (\r\n and the Unicode separators become \n) and a tab
# is expanded; every other character of _SHOWN is shown.
_BREAK: Final = re.compile("\r\n|[\n\u2028\u2029]")


_SHORT: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def visible(char: str) -> str:
    """How ``pi-ask`` shows a character a terminal would act on or not show: its JSON escape
    (``\\t``, ``\\n`` ... or ``\\uXXXX``), so text output and ``--json`` output agree."""
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def _show(match: re.Match[str]) -> str:
    return visible(match.group())


def clean(text: str | DisplayText, *, multiline: bool = False) -> str:
    """``text`` (form text, display-only or not) made inert for a terminal.

    Single-line (the default, for labels, values, titles, ids) shows line breaks and tabs as
    escapes too, so one field cannot forge the next line and ``"a\\tb"`` never looks like
    ``"a b"``; ``multiline`` (prompts, previews, messages) keeps line breaks as ``\\n`` and
    expands tabs.
    """
    text = str(text)
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to do
    if not multiline:
        return _SHOWN.sub(_show, text)
    lines = [_SHOWN.sub(_show, line.expandtabs(4)) for line in _BREAK.split(text)]
    return "\n".join(lines)


def _cell_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    if "\u1160" <= char <= "\u11ff":  # Hangul medial vowels and final consonants join the syllable
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def width(text: str) -> int:
    """Terminal cells ``text`` takes (after ``clean``; controls are not expected here)."""
    total = 0
    joined = False
    for char in text:
        if joined:  # after a zero-width joiner the emoji sequence draws as one glyph
            joined = False
            continue
        if char == "\u200d":
            joined = True
            continue
        if char == "\ufe0f" and total:  # emoji presentation: the previous glyph takes two cells
            total += 1
            continue
        total += _cell_width(char)
    return total


def pad(text: str, cells: int) -> str:
    """``text`` followed by spaces up to ``cells`` terminal cells (``str.ljust`` by display)."""
    return text + " " * max(0, cells - width(text))


def json_line(value: object, *, indent: int | None = None) -> str:
    """``json.dumps`` for output: readable UTF-8, but every character ``clean`` shows as an
    escape is written as that same ``\\uXXXX`` escape (the same JSON value)."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return _JSON_SHOWN.sub(_show, text)


def emit(stream: TextIO, text: str) -> None:
    """Write ``text`` to ``stream`` at once, for threads that may still be writing at exit.

    The prompting thread is a daemon. Had it gone through the stream's buffer, it could hold
    the buffer's lock when Ctrl-C ends the command, and the interpreter aborts at exit ("could
    not acquire lock ... at interpreter shutdown"). The process's own stdout and stderr are
    therefore written with ``os.write`` on their descriptors; only the main thread first
    flushes what a ``print`` left buffered (taking the lock is safe there). Any other stream (a
    capture in tests) is written and flushed as usual.
    """
    encoding = getattr(stream, "encoding", None) or "utf-8"
    # A terminal that is not UTF-8 gets "?" for what it cannot show, never a traceback.
    data = text.encode(encoding, "replace")
    if stream is not sys.__stdout__ and stream is not sys.__stderr__:
        stream.write(data.decode(encoding))
        stream.flush()
        return
    if threading.current_thread() is threading.main_thread():
        stream.flush()
    fd = stream.fileno()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def echo(text: str) -> None:
    """``print`` for text that may hold form content: cleaned, keeping its lines."""
    emit(sys.stdout, clean(text, multiline=True) + "\n")
