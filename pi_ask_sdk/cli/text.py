"""Terminal-safe text: form text is untrusted, so what ``pi-ask`` prints is made inert first.

A form's title, prompts, labels, values, previews, notes and the host's messages come from
whatever process opened the form. Printed raw, an escape sequence in them could recolour or
clear the terminal, move the cursor over earlier lines, set the window title or a clipboard
(OSC 52), and bidi overrides could make ``yes`` read as ``on``. ``clean`` removes escape
sequences (ESC, CSI, OSC, DCS/SOS/PM/APC, and their 8-bit C1 forms), shows every other C0/C1
control and bidi control as U+FFFD, and replaces lone surrogates (which cannot be printed as
UTF-8) with U+FFFD too. Everything else, including every script, emoji and combining mark,
stays as it is.

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

__all__ = ["clean", "echo", "emit", "json_line", "pad", "width"]

REPLACEMENT: Final = "\ufffd"

# ESC [ ... final byte, ESC ] ... BEL/ST, ESC P|X|^|_ ... ST, other two-byte ESC sequences, and
# the 8-bit forms (U+009B CSI, U+009D OSC, U+0090/98/9E/9F strings). An unterminated string
# sequence runs to the end of the text: a terminal would swallow it the same way.
_SEQUENCE: Final = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_BIDI: Final = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_LINE_BREAKS: Final = "\n\r\x0b\x0c\x85\u2028\u2029"
# Controls left after the sequences are gone (tab and line breaks are handled separately).
_CONTROL: Final = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f" + _BIDI + "\ud800-\udfff]")
_BREAK: Final = re.compile("\r\n|[" + _LINE_BREAKS + "]")
# Characters that would act on a terminal, or not encode, inside a JSON string.
_JSON_UNSAFE: Final = re.compile("[\x7f-\x9f" + _BIDI + "\u2028\u2029\ud800-\udfff]")


def clean(text: str | DisplayText, *, multiline: bool = False) -> str:
    """``text`` (form text, display-only or not) made inert for a terminal.

    Single-line (the default, for labels, values, titles) turns line breaks and tabs into
    spaces so one field cannot forge the next line; ``multiline`` keeps ``\\n`` (every other
    line break becomes ``\\n``) and expands tabs.
    """
    text = str(text)
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to do
    text = _SEQUENCE.sub("", text)
    text = _BREAK.sub("\n" if multiline else " ", text)
    text = _CONTROL.sub(REPLACEMENT, text)
    return text.expandtabs(4) if multiline else text.replace("\t", " ")


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


def json_line(value: object) -> str:
    """``json.dumps`` for one output line: readable UTF-8, but C1 controls, bidi controls, line
    separators and lone surrogates are written as ``\\uXXXX`` escapes (the same JSON value)."""
    text = json.dumps(value, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
