"""bench/peer_host.py (the plain-dict comparison peer of bench/core.py) against the spec.

The peer is only a benchmark yardstick, but ``bench/core.py``'s "<= 0.5x the peer" target is only
fair if the peer does the whole job: these tests hold it to every example of ``examples.json``
exactly (messages, key order and timestamps aside), as the core's own conformance tests do.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.spec_examples import EXAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import peer_host

FLOW_ID = re.compile(r"flow:\d+:[0-9a-z]+")


def key_order(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, key_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_order(v) for v in value]
    return None


def recorder(seen: list[tuple[str, Any]], channel: str) -> peer_host.Handler:
    return lambda data: seen.append((channel, data))


def recorded_host(name: str) -> tuple[peer_host.PeerHost, list[tuple[str, Any]]]:
    bus = peer_host.PeerBus()
    seen: list[tuple[str, Any]] = []
    for channel in (peer_host.STARTED, peer_host.COMPLETED, peer_host.SUBMIT_RESULT):
        bus.on(channel, recorder(seen, channel))
    spec = EXAMPLES["forms"][name]
    host = peer_host.PeerHost(bus, present_single_as_multi=spec.get("presentSingleAsMulti", False))
    return host, seen


@pytest.mark.parametrize("name", sorted(EXAMPLES["startedByForm"]))
def test_started_matches_spec(name: str) -> None:
    host, seen = recorded_host(name)
    spec = EXAMPLES["forms"][name]
    flow_id = host.start(json.loads(json.dumps(spec["params"])), spec.get("toolCallId"))
    [(channel, payload)] = seen
    assert channel == peer_host.STARTED
    expected = dict(EXAMPLES["startedByForm"][name])
    assert type(payload.pop("createdAt")) is int
    expected.pop("createdAt")
    if expected["flowId"].startswith("flow:"):
        assert FLOW_ID.fullmatch(payload["flowId"])
        expected["flowId"] = payload["flowId"]
    assert payload == expected
    assert key_order(payload) == key_order(expected)
    assert flow_id == payload["flowId"]


def _without_notes(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not k.startswith("(")}


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=f"ex{e['id']:02d}") for e in EXAMPLES["examples"]]
)
def test_submit_examples_match_spec(example: dict[str, Any]) -> None:
    host, seen = recorded_host(example["form"])
    spec = EXAMPLES["forms"][example["form"]]
    flow_id = host.start(json.loads(json.dumps(spec["params"])), spec.get("toolCallId"))
    seen.clear()
    for step in example["steps"]:
        text = json.dumps(step["request"]).replace("flow:<epoch-ms>:<base36-random>", flow_id)
        host.bus.emit(peer_host.SUBMIT, json.loads(text))
        got, seen[:] = list(seen), []
        want = step["emitted"]
        assert [c for c, _ in got] == [w["channel"] for w in want]
        for (channel, payload), expected in zip(got, want, strict=True):
            if channel == peer_host.COMPLETED:
                assert payload["flowId"] == flow_id
                assert type(payload["completedAt"]) is int
                assert payload["result"] == expected["result"]
                assert key_order(payload["result"]) == key_order(expected["result"])
            else:
                data = json.loads(
                    json.dumps(expected["data"]).replace("flow:<epoch-ms>:<base36-random>", flow_id)
                )
                assert payload == _without_notes(data)
                assert key_order(payload) == key_order(_without_notes(data))


@pytest.mark.parametrize("name", sorted(EXAMPLES["validations"]))
def test_form_validation_examples(name: str) -> None:
    case = EXAMPLES["validations"][name]
    host, seen = recorded_host("A")
    with pytest.raises(peer_host.PeerInvalidForm) as caught:
        host.start(case["raw"], "call-V")
    assert caught.value.kind == "invalid_input"
    assert caught.value.issues == case["result"]["issues"]
    assert seen == []


def test_a_present_key_of_the_wrong_type_is_a_schema_error() -> None:
    host, seen = recorded_host("A")
    with pytest.raises(peer_host.PeerInvalidForm) as caught:
        host.start({"questions": [{"id": 1, "prompt": "p", "options": []}]}, "call-S")
    assert caught.value.kind == "schema_error"
    assert caught.value.issues[0]["path"] == "questions[0].id"
    assert seen == []
