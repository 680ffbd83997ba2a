"""Form text printed by pi-ask is inert on a terminal and aligned by display width."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_ask_sdk.cli.render import render_flow
from pi_ask_sdk.cli.text import clean, echo, json_line, pad, width
from pi_ask_sdk.forms import FlowView
from pi_ask_sdk.testing import AskParams, FakeHost


def view(params: AskParams, tool_call_id: str) -> FlowView:
    started = FakeHost().open(params, tool_call_id=tool_call_id).started_event()
    assert started is not None
    return FlowView.from_started(started)


# Anything a terminal acts on: C0 (but \n), DEL, C1, bidi controls, lone surrogates.
UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\\u001b[31mred\\u001b[0m"),  # colours: ESC shown, inert
        ("a\x1b[2J\x1b[Hb", "a\\u001b[2J\\u001b[Hb"),  # clear screen, cursor home
        ("\x1b]0;owned\x07title", "\\u001b]0;owned\\u0007title"),  # OSC window title
        ("\x1b]52;c;ZXZpbA==\x1b\\clip", "\\u001b]52;c;ZXZpbA==\\u001b\\clip"),  # OSC 52
        ("\x9b31mc1\x9b0m", "\\u009b31mc1\\u009b0m"),  # 8-bit CSI
        ("yes\rno", "yes\\rno"),  # carriage return would overwrite the line
        ("bell\x07", "bell\\u0007"),
        ("\u202eon\u202c", "\\u202eon\\u202c"),  # RIGHT-TO-LEFT OVERRIDE: "on" would read "no"
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
        ("tab\there", "tab\\there"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("unterminated \x1b]0;swallow", "unterminated \\u001b]0;swallow"),
    ],
)
def test_clean_shows_controls_as_their_json_escape(raw: str, shown: str) -> None:
    assert clean(raw) == shown
    if "\\" not in raw:  # (JSON also escapes a backslash)
        assert json_line(raw) == f'"{shown}"'  # the same way in --json output


@pytest.mark.parametrize(
    "pair",
    [
        ("yes", "yes\x1b[0m"),  # an escape sequence that used to be stripped
        ("ok\x01", "ok\x02"),  # two controls that used to be the same U+FFFD
        ("ok\x01", "ok\ufffd"),
        ("a b", "a\tb"),
        ("a b", "a\nb"),
        ("on", "\u202eon\u202c"),
        ("id", "id\u200b"),
    ],
)
def test_values_that_differ_only_by_controls_never_look_the_same(pair: tuple[str, str]) -> None:
    first, second = pair
    assert clean(first) != clean(second)
    assert clean(first, multiline=True) != clean(second, multiline=True) or "\n" in second


@given(st.text(), st.text())
def test_clean_is_one_to_one_on_text_without_backslashes(first: str, second: str) -> None:
    if first != second and "\\" not in first + second:
        assert clean(first) != clean(second)


def test_clean_keeps_every_script_emoji_and_combining_mark() -> None:
    text = "部署 ✅ 👍🏽 café e\u0301 Привет שלום مرحبا"
    assert clean(text) == text
    assert clean("plain ascii") == "plain ascii"


def test_multiline_keeps_lines_and_single_line_cannot_forge_one() -> None:
    assert clean("one\ntwo\r\nthree\u2028four", multiline=True) == "one\ntwo\nthree\nfour"
    assert "\n" not in clean("label\n3) fake option")
    assert clean("a\tb", multiline=True) == "a   b"


@given(st.text())
def test_clean_output_is_always_inert(text: str) -> None:
    assert not UNSAFE.search(clean(text))
    assert "\n" not in clean(text)
    assert not UNSAFE.search(clean(text, multiline=True))


@given(st.recursive(st.text() | st.integers(), lambda inner: st.lists(inner, max_size=3)))
def test_json_line_is_the_same_value_without_raw_controls(value: object) -> None:
    line = json_line({"data": value})
    assert json.loads(line) == {"data": value}
    assert not UNSAFE.search(line)
    assert "\n" not in line
    assert "\u2028" not in line


@pytest.mark.parametrize(
    ("text", "cells"),
    [
        ("yes", 3),
        ("部署", 4),  # wide CJK
        ("\uff59\uff45\uff53", 6),  # fullwidth forms of "yes"
        ("👍", 2),
        ("e\u0301", 1),  # combining acute accent
        ("\u2764\ufe0f", 2),  # heart with emoji presentation
        ("👨\u200d👩\u200d👧", 2),  # one family glyph (ZWJ sequence)
        ("한국", 4),
        ("", 0),
    ],
)
def test_width_counts_terminal_cells(text: str, cells: int) -> None:
    assert width(text) == cells
    assert width(pad(text, 8)) == max(8, cells)


def test_options_line_up_by_display_width() -> None:
    flow = view(
        {
            "questions": [
                {
                    "id": "q",
                    "prompt": "Pick",
                    "options": [
                        {"value": "部署", "label": "Deploy"},
                        {"value": "👍", "label": "Approve"},
                        {"value": "cafe\u0301", "label": "Cafe"},
                        {"value": "no", "label": "No"},
                    ],
                }
            ]
        },
        "wide",
    )
    lines = [line for line in render_flow(flow).splitlines() if ") " in line]
    columns = {
        width(line[: line.index(label)])
        for line, label in zip(lines, ["Deploy", "Approve", "Cafe", "No"], strict=True)
    }
    assert len(columns) == 1, lines


def test_a_hostile_form_renders_inert() -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\u202e"
    flow = view(
        {
            "title": f"Release{evil}",
            "questions": [
                {
                    "id": "q",
                    "label": f"Q{evil}",
                    "prompt": f"Deploy?{evil}\nsecond line",
                    "options": [
                        {
                            "value": f"yes{evil}",
                            "label": f"Yes\n3) forged{evil}",
                            "description": f"d{evil}",
                            "preview": f"p{evil}\n\x9b2Jp2",
                        },
                        {"value": "no", "label": "No"},
                    ],
                }
            ],
        },
        f"t{evil}",
    )
    text = render_flow(flow)
    assert not UNSAFE.search(text.replace("\n", ""))
    assert "\\u001b]0;pwned\\u0007\\u001b[2J\\u202e" in text  # shown, inert
    assert "Yes\\n3) forged" in text  # the label's line break cannot start a fake option line
    assert "   Deploy?" in text
    assert "   second line" in text


def test_echo_never_raises_on_a_terminal_that_is_not_utf8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii"))
    echo("部署 \ud800 \x1b[31mred")
    sys.stdout.flush()
    assert raw.getvalue() == b"?? \\ud800 \\u001b[31mred\n"


def test_json_line_escapes_lone_surrogates_instead_of_failing_to_print() -> None:
    line = json_line({"a": "x\ud800y", "b": "\u202e\x9b"})
    assert line == '{"a": "x\\ud800y", "b": "\\u202e\\u009b"}'
    assert json.loads(line) == {"a": "x\ud800y", "b": "\u202e\x9b"}
    line.encode("utf-8")  # printable as UTF-8
