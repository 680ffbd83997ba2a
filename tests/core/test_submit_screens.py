"""The core's fast path for ask_user input agrees with its full, step-by-step rules.

``plain_form`` (one pass for well-formed input) must give exactly the form the full pipeline
gives, or decline (None) so that the full pipeline reports the issues.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_ask_core import COMPLETED, FlowHost, InvalidForm, LocalEventBus
from pi_ask_core.forms import _parse_full, parse_form, plain_form
from tests.spec_examples import EXAMPLES

# Texts that hit every normalization rule: blanks of JS whitespace, separators for label
# derivation, duplicates after trimming, lone surrogates.
words = st.sampled_from([" a ", "a", "b ", "yes", "follow_up", "x-y", "\ufeffx", "ß", "\ud83d"])
blanks = st.sampled_from(["", " ", "\u00a0", "--", "_"])
texts = st.integers(0, 4).flatmap(lambda n: blanks if n == 3 else words)
odd = st.one_of(
    st.none(), st.booleans(), st.integers(-1, 2), st.floats(allow_nan=False), texts, st.just([])
)
types = st.sampled_from(["single", "multi", "preview", "Single", "", " multi"])


def shaped(
    needed: dict[str, st.SearchStrategy[Any]], /, **optional: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts whose ``needed`` keys are usually present and of their type (so that many inputs
    are well formed), the others present or absent; any key may hold another JSON type."""

    def mostly(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.integers(0, 9).flatmap(lambda n: odd if n == 5 else value)

    return st.fixed_dictionaries(
        {key: mostly(value) for key, value in needed.items()},
        optional={"extra": odd, **{key: mostly(value) for key, value in optional.items()}},
    )


def maybe_tuple(items: list[Any]) -> list[Any] | tuple[Any, ...]:
    # A tuple is no JSON array for the spec's structure check (msgspec would take it).
    return tuple(items) if len(items) == 2 else items


options = shaped(
    {"value": texts},
    label=texts,
    description=texts,
    preview=texts,
    previewFile=st.sampled_from(["", " ", "missing-file.txt"]),
    recommended=st.booleans(),
)
questions = shaped(
    {
        "id": texts,
        "prompt": texts,
        "options": st.lists(options, min_size=1, max_size=3).map(maybe_tuple),
    },
    label=texts,
    type=types,
    required=st.booleans(),
)
forms = shaped(
    {"questions": st.lists(questions, min_size=1, max_size=3).map(maybe_tuple)},
    title=texts,
    background=st.booleans(),
)


def full(raw: object, as_multi: bool) -> object:
    try:
        return _parse_full(raw, present_single_as_multi=as_multi, cwd=None)
    except InvalidForm as error:
        return error.kind


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.one_of(forms, odd), as_multi=st.booleans())
def test_plain_form_gives_the_full_pipelines_form_or_declines(raw: object, as_multi: bool) -> None:
    fast = plain_form(raw, present_single_as_multi=as_multi)
    if fast is not None:
        assert fast == full(raw, as_multi)


@pytest.mark.parametrize("name", sorted(EXAMPLES["forms"]))
@pytest.mark.parametrize("as_multi", [False, True])
def test_the_spec_forms_take_the_fast_path_and_agree(name: str, as_multi: bool) -> None:
    params = EXAMPLES["forms"][name]["params"]
    fast = plain_form(params, present_single_as_multi=as_multi)
    assert fast is not None
    assert fast == full(params, as_multi)
    assert parse_form(params, present_single_as_multi=as_multi) == fast


def _option(**fields: object) -> dict[str, object]:
    return {"value": " v ", **fields}


EDGE_FORMS: list[object] = [
    {"title": " T ", "questions": [{"id": " q ", "prompt": " P ", "options": [_option()]}]},
    {
        "title": " ",
        "questions": [{"id": "q", "label": " L ", "prompt": "p", "options": [_option()]}],
    },
    {
        "questions": [
            {"id": "q", "label": "\u3000", "prompt": "p", "options": [_option(label=" x ")]}
        ]
    },
    {"questions": [{"id": "q", "prompt": "p", "options": [{"value": "follow_up-now"}]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [{"value": "--"}]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option(label=" ", description=" d ")]}]},
    {
        "questions": [
            {"id": "q", "prompt": "p", "options": [_option(description="\t", preview=" ")]}
        ]
    },
    {
        "questions": [
            {"id": "q", "prompt": "p", "type": "preview", "options": [_option(preview=" s ")]}
        ]
    },
    {
        "questions": [
            {"id": "q", "prompt": "p", "type": "preview", "options": [_option(preview=" ")]}
        ]
    },
    {"questions": [{"id": "q", "prompt": "p", "options": [_option(previewFile=" ")]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option(previewFile="nope.txt")]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option(recommended=True)]}]},
    {"questions": [{"id": "q", "prompt": "p", "required": True, "options": [_option()]}]},
    {"questions": [{"id": "q", "prompt": "p", "type": "multi", "options": [_option()]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option(), _option(value="v")]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option()]}] * 2},
    {"questions": ({"id": "q", "prompt": "p", "options": [_option()]},)},
    {"questions": [{"id": "q", "prompt": "p", "options": (_option(),)}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option()], "x": [[]]}], "y": None},
    {"background": None, "questions": [{"id": "q", "prompt": "p", "options": [_option()]}]},
    {"questions": [{"id": "q", "prompt": "p", "type": "single ", "options": [_option()]}]},
    {"questions": [{"id": "q", "prompt": "p", "options": [_option(label=None)]}]},
    {"questions": [{"id": "q", "prompt": " ", "options": [_option()]}]},
    {"questions": []},
]


@pytest.mark.parametrize("raw", EDGE_FORMS)
@pytest.mark.parametrize("as_multi", [False, True])
def test_plain_form_on_each_normalization_rule(raw: object, as_multi: bool) -> None:
    fast = plain_form(raw, present_single_as_multi=as_multi)
    if fast is not None:
        assert fast == full(raw, as_multi)
    try:
        assert parse_form(raw, present_single_as_multi=as_multi) == full(raw, as_multi)
    except InvalidForm as error:
        assert error.kind == full(raw, as_multi)


# --- a submit envelope as a dict or as a dict subclass ------------------------------------------
# A Python caller may hand the host a dict subclass: it must get the same acknowledgement and the
# same completion as the plain dict (the host reads every envelope with parse_envelope).

_ANSWER_FORM = {
    "questions": [
        {
            "id": "q",
            "prompt": "p",
            "type": "multi",
            "options": [{"value": "a"}, {"value": "b"}],
        }
    ]
}
_ABSENT: Any = object()
envelope_fields = {
    "version": st.sampled_from([1, 1.0, True, 2, "1", None, _ABSENT]),
    "requestId": st.sampled_from(["r", "", " ", 7, None, "\ud83d", _ABSENT]),
    "flowId": st.sampled_from(["tool:a", "tool:b", "", 3, None, _ABSENT]),
    "response": st.sampled_from(
        [
            {"kind": "cancel"},
            {"kind": "answer", "answers": {"q": {"values": ["a", "b"], "note": "n"}}},
            {"kind": "answer", "mode": "elaborate", "answers": {"q": {"note": "why"}}},
            {"kind": "answer", "answers": {"q": {"values": ["x"]}}},
            {"kind": "answer", "answers": {"q": {"values": ["a", "a"]}}},
            {"kind": "answer"},
            {"kind": "nope"},
            {"kind": None},
            {},
            [],
            None,
            "answer",
            _ABSENT,
        ]
    ),
    "extra": st.sampled_from([_ABSENT, None, [[]], {"k": "v"}]),
}
envelopes = st.fixed_dictionaries({key: value for key, value in envelope_fields.items()}).map(
    lambda fields: {k: v for k, v in fields.items() if v is not _ABSENT}
)


class _DictSubclass(dict[str, Any]):
    pass


def _outcome(
    view: Callable[[dict[str, Any]], object], data: dict[str, Any]
) -> tuple[object, object]:
    bus = LocalEventBus()
    completed: list[object] = []
    bus.on(COMPLETED, completed.append)
    host = FlowHost(bus, clock=lambda: 0)
    host.start(_ANSWER_FORM, tool_call_id="a")
    ack = host.resolve_submit(view(data))
    return msgspec.to_builtins(ack), msgspec.to_builtins(completed)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=envelopes)
def test_a_dict_subclass_envelope_gets_the_dict_verdict(data: dict[str, Any]) -> None:
    assert _outcome(lambda d: d, data) == _outcome(_DictSubclass, data)


def test_a_well_formed_dict_subclass_submit_is_accepted_like_the_dict() -> None:
    data = {"version": 1, "requestId": "r", "flowId": "tool:a", "response": {"kind": "cancel"}}
    ack, completed = _outcome(lambda d: d, data)
    assert ack == {"version": 1, "requestId": "r", "flowId": "tool:a", "ok": True}
    assert _outcome(_DictSubclass, data) == (ack, completed)


# --- the "does it encode" check -----------------------------------------------------------------


def test_the_encode_check_answers_as_encode_does() -> None:
    from pi_ask_core import host

    assert host._json({"a": ["x", 1, True, None]})
    assert not host._json({"a": "\ud83d"})  # a lone surrogate
    assert not host._json({"a": object()})
