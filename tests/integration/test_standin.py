"""The shipped stand-in host inside a real Pi: every decision is pi_ask_core's.

The spec's examples run through Pi (relay socket -> pi.events -> stand-in extension -> FlowHost in
this process and back) and must give exactly what the core gives; the extension must stay off
unless its variable names a safe socket; and an open ``ask_user`` call must end cleanly when
the tool call is aborted or the Python side goes away.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
import pytest

from pi_ask_core import InvalidForm
from pi_ask_core.forms import parse_form
from pi_ask_sdk.testing.realpi import PiRecord
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    make_private_dir,
    running_pi,
    single_question,
)
from tests.spec_examples import EXAMPLES

if TYPE_CHECKING:
    from pi_ask_wire import RemoteResponse

pytestmark = pytest.mark.pi

SUBMIT_RESULT = "pi-agent-ask:submit-result"
COMPLETED = "pi-agent-ask:completed"
STARTED = "pi-agent-ask:started"


class RawRelay:
    """A bare relay client: exactly the JSON Pi's bus carried, nothing decoded by the SDK.

    It says in its hello that it answers forms (``role``), so a headless Pi opens them."""

    def __init__(self, path: Path, role: str = "answerer") -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(str(path))
        self.buffer = b""
        hello = self.read()
        assert hello["type"] == "hello"
        for _ in range(hello["replaying"]):
            self.read()
        self.send_line(json.dumps({"type": "hello", "version": 1, "role": role}).encode())
        assert self.read() == {"type": "welcome", "version": 1, "role": role}

    def read(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("relay closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    def event(self) -> tuple[str, Any]:
        message = self.read()
        assert message["type"] == "event", message
        return message["channel"], message["data"]

    def submit(self, data: object) -> None:
        line = {"type": "emit", "channel": "pi-agent-ask:submit", "data": data}
        self.sock.sendall(json.dumps(line).encode() + b"\n")

    def send_line(self, line: bytes) -> None:
        self.sock.sendall(line + b"\n")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def spec_pis(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[bool, PiProcess]]:
    """Two Pis: the stand-in with and without "present single as multi" (form F)."""
    with (
        running_pi(pi_installation, tmp_path_factory.mktemp("pi"), shared_tmp=shared_tmp) as plain,
        running_pi(
            pi_installation,
            tmp_path_factory.mktemp("pi"),
            shared_tmp=shared_tmp,
            present_single_as_multi=True,
        ) as multi,
    ):
        yield {False: plain, True: multi}


def _own_instruction(result: Any, expected: Any) -> Any:
    if "elaboration" in expected:  # our own wording, checked by tests/core
        expected = json.loads(json.dumps(expected))
        expected["elaboration"]["instruction"] = result["elaboration"]["instruction"]
    return expected


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=f"ex{e['id']:02d}") for e in EXAMPLES["examples"]]
)
def test_spec_submit_examples_through_a_real_pi(
    spec_pis: dict[bool, PiProcess], example: dict[str, Any]
) -> None:
    form = EXAMPLES["forms"][example["form"]]
    pi = spec_pis[bool(form.get("presentSingleAsMulti", False))]
    relay = RawRelay(pi.socket_path)
    try:
        flow_id = pi.open_form(form["params"], tool_call_id=form.get("toolCallId"))
        channel, started = relay.event()
        assert (channel, started["flowId"]) == (STARTED, flow_id)
        for step in example["steps"]:
            request = json.loads(json.dumps(step["request"]))
            if isinstance(request, dict) and str(request.get("flowId", "")).startswith("flow:<"):
                request["flowId"] = flow_id
            relay.submit(request)
            emitted = [relay.event() for _ in step["emitted"]]
            assert [c for c, _ in emitted] == [e["channel"] for e in step["emitted"]]
            for (channel, payload), want in zip(emitted, step["emitted"], strict=True):
                if channel == SUBMIT_RESULT:
                    expected = {
                        k: v
                        for k, v in want["data"].items()
                        if k in ("version", "requestId", "flowId", "ok", "error", "message")
                    }
                    if example["id"] == 31:
                        expected["flowId"] = flow_id
                    if payload["ok"] is False:
                        assert payload["message"].strip()
                        payload = {**payload, "message": expected["message"]}
                    assert payload == expected
                else:
                    assert payload["flowId"] == flow_id
                    result = payload["result"]
                    assert result == _own_instruction(result, want["result"])
        if flow_id in pi.open_flow_ids():
            assert pi.cancel_form(flow_id)
            assert relay.event()[0] == COMPLETED
    finally:
        relay.close()
    assert pi.open_flow_ids() == []


@pytest.fixture(scope="module")
def tool_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PiProcess]:
    with running_pi(pi_installation, tmp_path_factory.mktemp("pi"), shared_tmp=shared_tmp) as pi:
        yield pi


def tool_call(pi: PiProcess, call_id: str, params: object) -> PiRecord:
    since = pi.mark()
    pi.prompt(f"CALL ask_user#{call_id} {json.dumps(params)}")
    return pi.wait_record(
        lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == call_id,
        since=since,
    )


@pytest.mark.parametrize("name", sorted(EXAMPLES["validations"]))
def test_spec_validation_examples_as_tool_calls(tool_pi: PiProcess, name: str) -> None:
    raw = EXAMPLES["validations"][name]["raw"]
    with pytest.raises(InvalidForm) as core:
        parse_form(raw)
    assert core.value.result is not None
    record = tool_call(tool_pi, f"v-{name}", raw)
    assert record.get("isError") is False
    assert record["result"]["details"] == msgspec.to_builtins(core.value.result)
    assert record["result"]["content"][0]["text"] == str(core.value)


def test_a_missing_key_is_invalid_input_not_a_schema_error(tool_pi: PiProcess) -> None:
    # Spec V3: a missing id is reported by the semantic rules, with its own path.
    params = {"questions": [{"prompt": "Which?", "options": [{"value": "follow_up"}]}]}
    details = tool_call(tool_pi, "missing-id", params)["result"]["details"]
    assert details["error"] == {
        "kind": "invalid_input",
        "issues": [{"path": "questions[0].id", "message": "Question 1: id is required"}],
    }


def test_wrong_json_types_fail_the_tool_call(tool_pi: PiProcess) -> None:
    params = {
        "questions": [{"id": "q", "prompt": "Which?", "options": [{"value": "a", "label": 5}]}]
    }
    record = tool_call(tool_pi, "bad-type", params)
    assert record.get("isError") is True
    assert "label must be a string, not number" in json.dumps(record["result"])


def test_started_payload_is_the_cores_normalized_form(tool_pi: PiProcess) -> None:
    params = {
        "title": "  Padded  ",
        "questions": [{"id": " q ", "prompt": " Which? ", "options": [{"value": "follow_up"}]}],
    }
    relay = RawRelay(tool_pi.socket_path)
    try:
        since = tool_pi.mark()
        tool_pi.prompt(f"CALL ask_user#norm {json.dumps(params)}")
        channel, started = relay.event()
        assert channel == STARTED
        form = parse_form(params)
        assert started["title"] == "Padded"
        assert started["questions"] == msgspec.to_builtins(list(form.questions))
        assert started["questions"][0]["options"][0]["label"] == "Follow up"
        assert tool_pi.cancel_form("tool:norm")
        channel, completed = relay.event()
        assert channel == COMPLETED
        record = tool_pi.wait_record(
            lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == "norm",
            since=since,
        )
        assert record["result"]["details"] == completed["result"]
        assert completed["result"]["cancelled"] is True
    finally:
        relay.close()


def test_abort_completes_the_flow_cancelled_and_the_tool_returns_it(tool_pi: PiProcess) -> None:
    # The real extension, measured: Pi's abort of an open form emits completed (cancelled), in
    # the TUI and through an external UI alike; the tool returns that cancelled result.
    relay = RawRelay(tool_pi.socket_path)
    try:
        since = tool_pi.mark()
        tool_pi.prompt(f"CALL ask_user#abort-me {json.dumps(single_question())}")
        assert relay.event()[0] == STARTED
        tool_pi.request({"type": "abort"})
        record = tool_pi.wait_record(
            lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == "abort-me",
            since=since,
        )
        details = record["result"]["details"]
        assert details["cancelled"] is True
        assert details["answers"] == {}
        channel, completed = relay.event()
        assert (channel, completed["flowId"]) == (COMPLETED, "tool:abort-me")
        assert completed["result"] == details
        assert "tool:abort-me" not in tool_pi.open_flow_ids()
        relay.submit({"version": 1, "requestId": "late", "flowId": "tool:abort-me",
                      "response": {"kind": "cancel"}})  # fmt: skip
        channel, ack = relay.event()
        assert (channel, ack["ok"], ack["error"]) == (SUBMIT_RESULT, False, "flow_not_found")
    finally:
        relay.close()


def test_python_side_gone_ends_an_open_tool_call_as_cancelled(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp) as pi:
        relay = RawRelay(pi.socket_path)
        try:
            since = pi.mark()
            pi.prompt(f"CALL ask_user#orphan {json.dumps(single_question())}")
            assert relay.event()[0] == STARTED
            assert pi.standin is not None
            pi.standin.stop()
            record = pi.wait_record(
                lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == "orphan",
                since=since,
            )
            assert record["result"]["details"]["cancelled"] is True
            assert pi.alive()
            assert pi.request({"type": "get_state"})["success"] is True
        finally:
            relay.close()


def commands_of(pi: PiProcess) -> set[str]:
    response = pi.request({"type": "get_commands"})
    commands = cast("list[dict[str, str]]", response["data"]["commands"])
    return {c["name"] for c in commands}


def test_the_extension_is_off_without_its_variable(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    from pi_ask_sdk.testing.standin import standin_extension_path

    with running_pi(
        pi_installation,
        tmp_path / "pi",
        shared_tmp=shared_tmp,
        test_host=False,
        extra_args=["-e", str(standin_extension_path())],
    ) as pi:
        names = commands_of(pi)
        assert "pi-ask-test-open" not in names
        assert not any(n.startswith("pi-ask-test") for n in names)
    assert "pi-ask-standin" not in "\n".join(pi.stderr_lines)


def test_the_extension_refuses_an_unsafe_socket_directory(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    from pi_ask_sdk.testing.standin import standin_extension_path

    shared = make_private_dir(tmp_path / "shared", 0o755)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(shared / "s.sock"))
    listener.listen()
    try:
        with running_pi(
            pi_installation,
            tmp_path / "pi",
            shared_tmp=shared_tmp,
            test_host=False,
            extra_args=["-e", str(standin_extension_path())],
            extra_env={"PI_ASK_STANDIN_SOCKET": str(shared / "s.sock")},
        ) as pi:
            assert not any(n.startswith("pi-ask-test") for n in commands_of(pi))
            assert "must be 0700" in pi.stderr_tail()
    finally:
        listener.close()
    assert os.stat(shared).st_mode & 0o777 == 0o755


def submit_of(flow_id: str, request_id: str, values: object) -> dict[str, object]:
    return {
        "version": 1,
        "requestId": request_id,
        "flowId": flow_id,
        "response": {"kind": "answer", "answers": {"q": {"values": values}}},
    }


def test_odd_submits_get_the_cores_answers_and_the_form_stays_open(tool_pi: PiProcess) -> None:
    relay = RawRelay(tool_pi.socket_path)
    try:
        flow_id = tool_pi.open_form(single_question())
        assert relay.event()[0] == STARTED
        # nested past both JSON decoders' recursion limits (too deep for json.dumps too)
        deep = json.dumps(submit_of(flow_id, "deep", "HOLE")).encode()
        relay.send_line(
            b'{"type":"emit","channel":"pi-agent-ask:submit","data":'
            + deep.replace(b'"HOLE"', b"[" * 5000 + b'"a"' + b"]" * 5000)
            + b"}"
        )
        channel, ack = relay.event()
        assert (channel, ack["requestId"], ack["error"]) == (
            SUBMIT_RESULT,
            "deep",
            "invalid_answer",
        )
        # the core takes a lone surrogate as U+FFFD (docs/protocol-decisions.md), echo included
        odd = [
            ("lone\ud800surrogate", "lone\ufffdsurrogate", ["\udfff"]),
            ("big", "big", ["x" * 900_000]),
        ]
        for request_id, echoed, values in odd:
            relay.submit(submit_of(flow_id, request_id, values))
            channel, ack = relay.event()
            assert channel == SUBMIT_RESULT
            assert (ack["requestId"], ack["ok"], ack["error"]) == (
                echoed,
                False,
                "invalid_answer",
            )
        # a burst: every submit answered once, in order, and the form still open until valid
        for n in range(300):
            relay.submit(submit_of(flow_id, f"burst-{n}", ["nope"]))
        acks = [relay.event() for _ in range(300)]
        assert [a["requestId"] for _, a in acks] == [f"burst-{n}" for n in range(300)]
        assert flow_id in tool_pi.open_flow_ids()
        relay.submit(submit_of(flow_id, "good", ["b"]))
        channels = [relay.event()[0] for _ in range(2)]
        assert channels == [COMPLETED, SUBMIT_RESULT]
        assert tool_pi.result(flow_id).answers["q"].values == ["b"]
    finally:
        relay.close()


def test_the_host_users_own_answers(tool_pi: PiProcess) -> None:
    relay = RawRelay(tool_pi.socket_path)
    try:
        # typed locally, then Escape: the cancel reports what was typed (spec §5.6, L6)
        first = tool_pi.open_form(single_question())
        assert relay.event()[0] == STARTED
        refused = tool_pi.set_local_answers(first, {"q": {"values": ["nope"]}})
        assert (refused["ok"], refused["error"]) == (False, "invalid_answer")
        assert tool_pi.set_local_answers(first, {"q": {"values": ["a"]}})["ok"] is True
        assert tool_pi.cancel_form(first)
        channel, completed = relay.event()
        assert channel == COMPLETED
        assert completed["result"]["cancelled"] is True
        assert completed["result"]["answers"]["q"]["values"] == ["a"]

        # the TUI user submits first: a bridge's later submit finds no flow
        second = tool_pi.open_form(single_question())
        assert relay.event()[0] == STARTED
        bad = tool_pi.complete_form(second, {"kind": "answer", "answers": {"x": {}}})
        assert (bad["ok"], bad["error"]) == (False, "invalid_answer")
        assert second in tool_pi.open_flow_ids()
        # Raw JSON, as a TUI user's submit arrives (values typed as the form's own by the stubs).
        raw = cast("RemoteResponse", {"kind": "answer", "answers": {"q": {"values": ["b"]}}})
        done = tool_pi.complete_form(second, raw)
        assert done["ok"] is True
        assert [f"{label}" for label in done["result"]["answers"]["q"]["labels"]] == ["Beta"]
        assert relay.event()[0] == COMPLETED
        relay.submit(submit_of(second, "late", ["a"]))
        channel, ack = relay.event()
        assert (channel, ack["error"]) == (SUBMIT_RESULT, "flow_not_found")
        gone = tool_pi.complete_form(second, {"kind": "cancel"})
        assert (gone["ok"], gone["error"]) == (False, "flow_not_found")
    finally:
        relay.close()
