"""Stress: big forms, big replays, bursts, slow and stalled readers, shared request ids, odd
text and deep JSON, all through a real Pi with the relay (issue 8). Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pi_ask_sdk import (
    Cancel,
    FlowId,
    SubmitAccepted,
    SubmitRejected,
)
from pi_ask_sdk.testing import AskParams
from pi_ask_sdk.transports.relay import RelayTransport
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    next_event,
    next_flow,
    running_pi,
    single_question,
)

pytestmark = pytest.mark.pi

MB = 1_000_000


def big_form(size: int, title: str = "Big") -> AskParams:
    form = single_question()
    form["title"] = title + " " + "x" * size
    return form


class RawClient:
    """A relay client on a plain blocking socket, reading only when told to."""

    def __init__(self, path: Path, *, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(str(path))
        self.buffer = b""
        self.eof = False

    def send(self, message: object) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def read_some(self, size: int, timeout: float) -> int:
        """Read up to ``size`` bytes (waiting at most ``timeout``); 0 at EOF."""
        self.sock.settimeout(timeout)
        chunk = self.sock.recv(size)
        if not chunk:
            self.eof = True
        self.buffer += chunk
        return len(chunk)

    def lines(self) -> list[dict[str, Any]]:
        *complete, _ = self.buffer.split(b"\n")
        return [json.loads(line) for line in complete if line.strip()]

    def read_until(self, predicate: Any, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            lines = self.lines()
            if predicate(lines):
                return lines
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                raise AssertionError(f"condition not met; {len(lines)} lines, eof={self.eof}")
            self.read_some(1 << 20, left)

    def close(self) -> None:
        self.sock.close()


@contextmanager
def raw_client(path: Path, **options: Any) -> Iterator[RawClient]:
    client = RawClient(path, **options)
    try:
        yield client
    finally:
        client.close()


def read_slowly(client: RawClient, count: int, deadline: float) -> None:
    """Read 64 KiB at a time with short pauses until ``count`` started events have arrived.

    Each line is parsed once (re-parsing the whole buffer per chunk would itself stall the
    reader for seconds on 12 MB).
    """
    seen, scanned = 0, 0
    while seen < count:
        assert time.monotonic() < deadline, f"only {seen} of {count} started events arrived"
        got = client.read_some(64 * 1024, TIMEOUT)
        assert got > 0, "the slow reader was dropped"
        end = client.buffer.rfind(b"\n")
        if end >= scanned:
            for line in client.buffer[scanned:end].split(b"\n"):
                if line.strip():
                    message = json.loads(line)
                    seen += message.get("channel") == "pi-agent-ask:started"
            scanned = end + 1
        time.sleep(0.005)  # a slow reader: not a synchronisation


def events_of(lines: list[dict[str, Any]], channel: str) -> list[dict[str, Any]]:
    return [m["data"] for m in lines if m.get("type") == "event" and m.get("channel") == channel]


def wait_stderr(pi: PiProcess, text: str, timeout: float = TIMEOUT) -> str:
    """Poll Pi's stderr lines (no event announces a log line) for ``text``, bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(pi.stderr_lines):
            if text in line:
                return line
        time.sleep(0.01)
    raise AssertionError(f"{text!r} not in Pi's stderr:\n{pi.stderr_tail()}")


# --- big forms and big replays ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_9_mb_form_reaches_a_client_and_is_answered(module_pi: PiProcess) -> None:
    preview = module_pi.workdir / "big-preview.txt"
    preview.write_text("line of a large preview file\n" * (9 * MB // 29 + 1))
    form: AskParams = {
        "title": "Review the big file",
        "questions": [
            {
                "id": "ok",
                "type": "preview",
                "prompt": "Looks right?",
                "options": [
                    {"value": "yes", "label": "Yes", "previewFile": str(preview)},
                    {"value": "no", "label": "No", "preview": "no"},
                ],
            }
        ],
    }
    async with module_pi.client() as client:
        flows = client.flows()
        flow_id = module_pi.open_form(form)
        flow = await next_flow(flows, flow_id)
        assert len(str(flow.questions[0].options[0].preview or "")) > 9 * MB - 100
        outcome = await client.respond(flow, choose(flow, "yes"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        assert client.transport.is_connected  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_ten_1_mb_forms_open_at_join_time_are_all_replayed(fresh_pi: PiProcess) -> None:
    opened = [fresh_pi.open_form(big_form(MB), tool_call_id=f"big-{n}") for n in range(10)]
    async with fresh_pi.client() as client:
        assert list(client.open_flows) == opened
        transport = client.transport
        assert isinstance(transport, RelayTransport)
        assert transport.connections == 1
        flow = client.open_flows[FlowId(opened[-1])]
        outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)


# --- bursts ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_burst_of_1000_cancels_is_answered_one_by_one(fresh_pi: PiProcess) -> None:
    forms = [fresh_pi.open_form(big_form(100_000), tool_call_id=f"b{n}") for n in range(20)]
    async with fresh_pi.client() as client:
        events = client.events()
        with raw_client(fresh_pi.socket_path) as raw:
            burst = b"".join(
                json.dumps(
                    {
                        "type": "emit",
                        "channel": "pi-agent-ask:submit",
                        "data": {
                            "version": 1,
                            "requestId": f"burst-{n}",
                            "flowId": forms[n % len(forms)],
                            "response": {"kind": "cancel"},
                        },
                    }
                ).encode()
                + b"\n"
                for n in range(1000)
            )
            raw.sock.sendall(burst)
            lines = await asyncio.to_thread(
                raw.read_until,
                lambda ls: len(events_of(ls, "pi-agent-ask:submit-result")) >= 1000,
                4 * TIMEOUT,
            )
        results = events_of(lines, "pi-agent-ask:submit-result")
        assert [r["requestId"] for r in results] == [f"burst-{n}" for n in range(1000)]
        assert sum(r["ok"] for r in results) == len(forms)  # one cancel per form wins
        assert all(m.get("own") is True for m in lines if m.get("channel", "").endswith("result"))
        completed: set[str] = set()
        while len(completed) < len(forms):
            event = await next_event(events, "completed")
            assert event.kind == "completed"
            completed.add(event.flow_id)
        assert completed == set(forms)
        assert client.transport.is_connected  # type: ignore[attr-defined]


# --- slow and stalled readers ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_slow_reader_gets_everything_and_a_stalled_one_is_dropped(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(
        pi_installation,
        tmp_path,
        shared_tmp=shared_tmp,
        extra_env={"PI_ASK_RELAY_STALL_MS": "1000"},
    ) as pi:
        with (
            raw_client(pi.socket_path, rcvbuf=4096) as slow,
            raw_client(pi.socket_path, rcvbuf=4096) as stalled,
        ):
            async with pi.client() as client:
                flows = client.flows()
                # The slow reader reads on its own thread from before the first form, so its
                # pauses stay far shorter than the stall window however busy the machine is
                # (run_in_executor submits now; the opens below do not yield to the loop).
                slow_reading = asyncio.get_running_loop().run_in_executor(
                    None, read_slowly, slow, 12, time.monotonic() + 8 * TIMEOUT
                )
                opened = [pi.open_form(big_form(MB), tool_call_id=f"s{n}") for n in range(12)]
                for flow_id in opened:
                    await next_flow(flows, flow_id)
                # At 64 KiB per pause it takes ~1 s over 12 MiB: the relay held more than the
                # 8 MiB mark for it all along, and it was never dropped (read_slowly checks EOF).
                await asyncio.wait_for(slow_reading, 9 * TIMEOUT)
                started = events_of(slow.lines(), "pi-agent-ask:started")
                assert [s["flowId"] for s in started] == opened
                # The stalled client read nothing: the relay drops it once the window passes.
                await asyncio.to_thread(wait_stderr, pi, "dropping a client that read nothing")
                while await asyncio.to_thread(stalled.read_some, 1 << 20, TIMEOUT):
                    pass
                assert stalled.eof
                assert len(events_of(stalled.lines(), "pi-agent-ask:started")) < len(opened)
                flow = client.open_flows[FlowId(opened[0])]
                outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
                assert isinstance(outcome, SubmitAccepted)
        assert pi.request({"type": "get_state"})["success"] is True


# --- shared request ids ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_two_bridges_with_the_same_request_id_each_get_their_own_verdict(
    module_pi: PiProcess,
) -> None:
    async with (
        module_pi.client() as one,
        module_pi.client() as two,
    ):
        flows_one, flows_two = one.flows(), two.flows()
        flow_id = module_pi.open_form(single_question())
        flow_one = await next_flow(flows_one, flow_id)
        flow_two = await next_flow(flows_two, flow_id)
        tickets = await asyncio.gather(
            one.submit(flow_one, choose(flow_one, "a"), request_id="same"),
            two.submit(flow_two, Cancel(flow_two.flow_id), request_id="same"),
        )
        results = await asyncio.gather(
            one.await_result(tickets[0], timeout=TIMEOUT),
            two.await_result(tickets[1], timeout=TIMEOUT),
        )
        kinds = sorted(type(r).__name__ for r in results)
        assert kinds == ["SubmitAccepted", "SubmitRejected"]
        rejected = next(r for r in results if isinstance(r, SubmitRejected))
        assert rejected.error == "flow_not_found"


# --- odd text and deep JSON ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_form_with_lone_surrogates_reaches_the_bridge(module_pi: PiProcess) -> None:
    form = single_question()
    form["title"] = "Ship \ud83d now \ud83d\ude00 \ude00"
    async with module_pi.client() as client:
        flows = client.flows()
        flow_id = module_pi.open_form(form)  # json.dumps sends them as \ud83d escapes
        flow = await next_flow(flows, flow_id)
        assert str(flow.title) == "Ship \ufffd now \U0001f600 \ufffd"
        outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)


@pytest.mark.asyncio
async def test_deeply_nested_submits_leave_the_relay_and_pi_working(module_pi: PiProcess) -> None:
    depth = 100_000
    async with module_pi.client() as client:
        flows = client.flows()
        flow_id = module_pi.open_form(single_question())
        flow = await next_flow(flows, flow_id)
        with raw_client(module_pi.socket_path) as raw:
            deep = '{"a":' * depth + "1" + "}" * depth
            line = (
                '{"type":"emit","channel":"pi-agent-ask:submit","data":{"version":1,'
                f'"requestId":"deep","flowId":"{flow_id}","response":{{"kind":"answer",'
                f'"answers":{{"q":{{"customText":{deep}}}}}}}}}}}\n'
            )
            raw.sock.sendall(line.encode())
            raw.sock.sendall(b"[" * depth + b"]" * depth + b"\n")
            await asyncio.to_thread(
                raw.read_until,
                lambda ls: (
                    any(
                        m.get("channel") == "pi-agent-ask:submit-result"
                        and m["data"].get("requestId") == "deep"
                        for m in ls
                    )
                    or any(m.get("type") == "error" for m in ls)
                ),
            )
        outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
    assert module_pi.request({"type": "get_state"})["success"] is True


# --- forms the host no longer has --------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_disposed_form_stops_being_replayed_after_flow_not_found(
    fresh_pi: PiProcess,
) -> None:
    kept = fresh_pi.open_form(single_question(), tool_call_id="kept")
    gone = fresh_pi.open_form(single_question(), tool_call_id="gone")
    assert fresh_pi.dispose_form(gone)  # no completed event: the relay cannot know yet
    async with fresh_pi.client() as client:
        assert list(client.open_flows) == [kept, gone]
        flow = client.open_flows[FlowId(gone)]
        outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitRejected)
        assert outcome.error == "flow_not_found"
    async with fresh_pi.client() as later:
        assert list(later.open_flows) == [kept]


@pytest.mark.asyncio
async def test_an_aborted_tool_call_stops_being_replayed(fresh_pi: PiProcess) -> None:
    async with fresh_pi.client() as client:
        flows = client.flows()
        since = fresh_pi.mark()
        fresh_pi.prompt("CALL ask_user#tc-abort " + json.dumps(single_question()))
        await next_flow(flows, "tool:tc-abort")
        fresh_pi.request({"type": "abort"})
        fresh_pi.wait_record(
            lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == "tc-abort",
            since=since,
        )
    async with fresh_pi.client() as later:
        assert "tool:tc-abort" not in later.open_flows


# --- socket path limits ------------------------------------------------------------------------


def test_a_relay_directory_too_long_for_a_socket_is_explained(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    relay_dir = tmp_path / ("r" * (120 - len(str(tmp_path))))
    pi = PiProcess(pi_installation, tmp_path, shared_tmp=shared_tmp, relay_dir=relay_dir)
    with pi:
        line = wait_stderr(pi, "relay disabled")
        assert "PI_ASK_RELAY_DIR" in line
        assert "longer than the 107 bytes" in line
        assert pi.request({"type": "get_state"})["success"] is True
        assert not pi.socket_path.exists()


@pytest.mark.asyncio
async def test_the_replay_set_is_bounded_to_the_newest_forms(fresh_pi: PiProcess) -> None:
    opened = [fresh_pi.open_form(single_question(), tool_call_id=f"r{n}") for n in range(260)]
    async with fresh_pi.client() as client:
        assert list(client.open_flows) == opened[-256:]
