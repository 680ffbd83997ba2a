"""Liveness of answering bridges (headless): the relay pings every answerer that answers pings
and drops one that stays silent past its limit; the grace rule then applies, as when an
answerer disconnects. A slow person behind a live bridge is never cut off.

Real Pi, real relay, real bridge processes (stopped with SIGSTOP, continued with SIGCONT). The
host is the stand-in in its headless negotiation (modelled on the real pi-agent-ask:
../shared/notes/real-extension.md), and also the real pi-agent-ask when
``PI_ASK_HOST_EXTENSION`` names a checkout of it (that host is not on npm, so the run has it
only where someone provides it). The limits are made small through the relay's variables, so
each case takes seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from pi_ask_sdk import SubmitAccepted
from pi_ask_sdk.testing.realpi import PiRecord
from pi_ask_sdk.transports.relay import RelayTransport
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    next_flow,
    running_pi,
    single_question,
)
from tests.integration.test_headless import call, completed_flows, tool_end

pytestmark = pytest.mark.pi

ROOT = Path(__file__).resolve().parents[2]
PING_MS = 200
PING_TIMEOUT_MS = 1000
GRACE_MS = 500
LIMITS = {
    "PI_ASK_RELAY_PING_MS": str(PING_MS),
    "PI_ASK_RELAY_PING_TIMEOUT_MS": str(PING_TIMEOUT_MS),
    "PI_ASK_RELAY_GRACE_MS": str(GRACE_MS),
}
DROPPED_WITHIN = (PING_TIMEOUT_MS + PING_MS) / 1000
"""The documented bound: silent for the limit, noticed at the next ping."""
SLACK = 4.0
"""What a loaded machine may add (Pi's own event loop, the record reaching this process)."""
STARTUP = 20.0
"""Bound for a bridge process to import and connect under a shared CPU."""
NO_ANSWERER = "no pi-ask client that answers forms"

HOSTS = ["stand-in"] + (["pi-agent-ask"] if os.environ.get("PI_ASK_HOST_EXTENSION") else [])


@pytest.fixture(scope="module", params=HOSTS)
def pi(
    request: pytest.FixtureRequest,
    pi_installation: PiEnv,
    shared_tmp: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PiProcess]:
    """A headless Pi whose relay pings every 200 ms, drops an answerer after 1 s of silence and
    keeps a form 0.5 s for a bridge that left."""
    own = Path(os.environ["PI_ASK_HOST_EXTENSION"]) if request.param == "pi-agent-ask" else None
    with running_pi(
        pi_installation,
        tmp_path_factory.mktemp("pi"),
        shared_tmp=shared_tmp,
        extra_env=LIMITS,
        host_extension=own,
    ) as process:
        yield process


class Bridge:
    """A ``liveness_bridge`` process: its stdout lines as they come (each read bounded), its
    stdin to answer with, and always continued and stopped at the end."""

    def __init__(self, mode: str, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.liveness_bridge", mode, str(path)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.lines.put)),
            threading.Thread(target=self._read, args=(self.process.stderr, self.stderr.append)),
        ]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str], put: Callable[[str], object]) -> None:
        for text in stream:
            put(text.rstrip("\n"))

    def expect(self, timeout: float = TIMEOUT) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"the bridge said nothing in {timeout:g} s; stderr:\n" + "\n".join(self.stderr)
            ) from None

    def say(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a stopped process acts on no SIGTERM
            self.process.terminate()
        try:
            self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(TIMEOUT)
        for reader in self.readers:
            reader.join(TIMEOUT)
        if self.process.stdin is not None:
            self.process.stdin.close()


@contextmanager
def bridge(mode: str, pi: PiProcess) -> Iterator[Bridge]:
    process = Bridge(mode, pi.socket_path)
    try:
        assert process.expect(STARTUP) == "ready"
        yield process
    finally:
        process.close()


def assert_no_answerer_error(pi: PiProcess, record: PiRecord, call_id: str) -> None:
    assert record.get("isError") is True
    assert NO_ANSWERER in json.dumps(record["result"])
    if pi.standin is not None:
        assert f"tool:{call_id}" not in completed_flows(pi)  # disposed, not completed
    assert f"tool:{call_id}" not in pi.open_flow_ids()


def test_a_stopped_bridge_ends_the_call_as_a_tool_error_after_the_limit_and_the_grace(
    pi: PiProcess,
) -> None:
    with bridge("watch", pi) as stopped:
        since = call(pi, "stopped")
        assert stopped.expect() == "flow tool:stopped"
        stopped.signal(signal.SIGSTOP)  # its socket stays open: only silence tells
        frozen = time.monotonic()
        bound = DROPPED_WITHIN + GRACE_MS / 1000 + SLACK
        record = tool_end(pi, "stopped", since, timeout=bound)
        took = time.monotonic() - frozen
        assert took < bound
        # the limit and the grace were both given (it may have answered a ping just before)
        assert took >= (PING_TIMEOUT_MS - PING_MS + GRACE_MS) / 1000 * 0.9
        assert_no_answerer_error(pi, record, "stopped")
        stopped.signal(signal.SIGCONT)
        # What it sees when it runs again: its connection was dropped (its view is reset), and
        # it reconnects and serves on; the failed form is not replayed to it.
        assert stopped.expect() == "ended session_ended"
        pi.wait_answerer(timeout=TIMEOUT)
        assert any("dropped this connection (unresponsive)" in line for line in stopped.stderr)
        since = call(pi, "after")
        assert stopped.expect() == "flow tool:after"  # a new form reaches it
    # (that form ends when the bridge has gone and the grace period with it)
    assert tool_end(pi, "after", since).get("isError") is True


def wait_no_answerer(pi: PiProcess, timeout: float) -> None:
    """Poll (the relay announces no change of its clients) until no answerer is counted."""
    deadline = time.monotonic() + timeout
    while pi.relay_clients()[0] != 0:
        assert time.monotonic() < deadline, f"an answerer still counted after {timeout:g} s"
        time.sleep(0.05)


def test_a_stopped_bridge_that_resumes_within_the_grace_period_finds_its_form_again(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    patient = {**LIMITS, "PI_ASK_RELAY_GRACE_MS": "60000"}
    with (
        running_pi(
            pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, extra_env=patient
        ) as pi,
        bridge("watch", pi) as stopped,
    ):
        since = call(pi, "resumed")
        assert stopped.expect() == "flow tool:resumed"
        stopped.signal(signal.SIGSTOP)
        wait_no_answerer(pi, DROPPED_WITHIN + SLACK)  # dropped: the grace period runs
        stopped.signal(signal.SIGCONT)
        assert stopped.expect() == "ended session_ended"
        assert stopped.expect() == "flow tool:resumed"  # replayed on its new connection
        assert "tool:resumed" in pi.open_flow_ids()
        stopped.close()  # (gone for good: the call ends when the grace period does)
        assert pi.cancel_form("tool:resumed")
        assert tool_end(pi, "resumed", since).get("isError") is False  # cancelled, not failed


def test_a_bridge_that_blocks_past_the_limit_gets_its_late_submit_lost(pi: PiProcess) -> None:
    with bridge("block", pi) as blocked:
        since = call(pi, "blocked")
        assert blocked.expect() == "flow tool:blocked"
        # Its event loop is blocked on stdin: no ping is answered, as if it were stopped.
        bound = DROPPED_WITHIN + GRACE_MS / 1000 + SLACK
        record = tool_end(pi, "blocked", since, timeout=bound)
        assert_no_answerer_error(pi, record, "blocked")
        blocked.say("go")  # it submits before it reads what the relay said
        assert blocked.expect() == "outcome lost session_ended"  # never "accepted"
    if pi.standin is not None:
        assert "tool:blocked" not in completed_flows(pi)


@pytest.mark.parametrize("mode", ["slow-async", "slow-sync"])
def test_a_slow_person_behind_a_live_bridge_is_not_cut_off(pi: PiProcess, mode: str) -> None:
    with bridge(mode, pi) as slow:
        since = call(pi, f"slow-{mode}")
        assert slow.expect() == f"flow tool:slow-{mode}"
        time.sleep(2.5 * PING_TIMEOUT_MS / 1000)  # the person thinks: longer than the limit
        slow.say("b")
        outcome, pings = slow.expect().rsplit(" pings=", 1)
        assert outcome == "outcome accepted"
        answered, connections = map(int, pings.split())
        assert answered >= PING_TIMEOUT_MS // PING_MS  # it was pinged, and answered
        assert connections == 1  # never dropped (a dropped bridge would reconnect)
    record = tool_end(pi, f"slow-{mode}", since)
    assert record.get("isError") is False
    assert record["result"]["details"]["answers"]["q"]["values"] == ["b"]
    assert not [line for line in slow.stderr if "refused a message" in line]  # pongs are fine
    assert not [line for line in slow.stderr if "dropped this connection" in line]


@pytest.mark.asyncio
async def test_a_stopped_pi_does_not_take_its_bridges_for_gone(pi: PiProcess) -> None:
    async with pi.client() as client:
        flows = client.flows()
        since = call(pi, "pi-stopped")
        flow = await next_flow(flows, "tool:pi-stopped")
        pi.kill(signal.SIGSTOP)  # the relay hears nothing while it does not run ...
        try:
            await asyncio.sleep(3 * PING_TIMEOUT_MS / 1000)  # ... for longer than the limit
        finally:
            pi.kill(signal.SIGCONT)
        # (on resuming, Pi's timers run before it reads what arrived meanwhile)
        outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        assert isinstance(client.transport, RelayTransport)
        assert client.transport.connections == 1  # never dropped
    record = tool_end(pi, "pi-stopped", since)
    assert record["result"]["details"]["answers"]["q"]["values"] == ["a"]


class Raw:
    """A bare client that says what it likes in its hello and reads every line (bounded)."""

    def __init__(self, path: Path, hello: dict[str, object] | None) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")
        self.hello = self.read()
        self.replays = [self.read()["data"]["flowId"] for _ in range(self.hello["replaying"])]
        if hello is not None:
            self.sock.sendall(json.dumps(hello).encode() + b"\n")
            assert self.read()["type"] == "welcome"

    def read(self) -> dict[str, Any]:
        line = self.reader.readline()
        if not line:
            raise EOFError("the relay closed the connection")
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    def read_until(
        self, kind: str, *, pong: bool = False, within: float = 4 * TIMEOUT
    ) -> list[dict[str, Any]]:
        """Every line up to and including the first of type ``kind``, within ``within``
        seconds; with ``pong``, each ping on the way is answered (alive until then)."""
        deadline = time.monotonic() + within
        seen = [self.read()]
        while seen[-1]["type"] != kind:
            if pong and seen[-1]["type"] == "ping":
                self.sock.sendall(b'{"type":"pong"}\n')
            assert time.monotonic() < deadline, f"no {kind} within {within:g} s: {seen}"
            seen.append(self.read())
        return seen

    def alive_until(self, kind: str) -> Callable[[], list[dict[str, Any]]]:
        """Answer pings on a thread until a line of type ``kind`` comes, and from then on say
        nothing: alive however long the test's own steps take meanwhile (a loaded machine may
        take longer than the ping limit to open a form). Returns the wait for those lines."""
        seen: list[dict[str, Any]] = []
        failed: list[BaseException] = []

        def run() -> None:
            try:
                seen.extend(self.read_until(kind, pong=True))
            except BaseException as exc:  # (raised again by the wait)
                failed.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()

        def wait() -> list[dict[str, Any]]:
            thread.join(5 * TIMEOUT)  # (read_until is bounded: 4 * TIMEOUT)
            assert not thread.is_alive(), f"no {kind} line"
            if failed:
                raise failed[0]
            return seen

        return wait

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def answerer(pong: int | None) -> dict[str, object]:
    hello: dict[str, object] = {"type": "hello", "version": 1, "role": "answerer"}
    if pong is not None:
        hello["pong"] = pong
    return hello


def test_the_hello_announces_the_limits(pi: PiProcess) -> None:
    raw = Raw(pi.socket_path, None)
    try:
        assert (raw.hello["ping"], raw.hello["pingMs"]) == (1, PING_MS)
        assert raw.hello["pingTimeoutMs"] == PING_TIMEOUT_MS
    finally:
        raw.close()


def test_only_answerers_that_answer_pings_are_pinged_and_dropped(pi: PiProcess) -> None:
    old = Raw(pi.socket_path, answerer(None))  # an SDK older than pings: kept as before
    watcher = Raw(pi.socket_path, {"type": "hello", "version": 1, "role": "observer", "pong": 1})
    silent = Raw(pi.socket_path, answerer(1))
    try:
        # Alive until the form reaches it, then silent: pings, then goodbye.
        form_reached = silent.alive_until("event")
        since = call(pi, "kept")
        assert form_reached()[-1]["data"]["flowId"] == "tool:kept"
        silent_saw = silent.read_until("goodbye")
        pings = silent_saw[:-1]
        assert pings
        assert all(line == {"type": "ping"} for line in pings)
        assert silent_saw[-1]["reason"] == "unresponsive"
        with pytest.raises(EOFError):
            silent.read()
        assert pi.relay_clients()[0] == 1  # the old answerer still counts: the form waits
        old.sock.sendall(
            json.dumps({
                "type": "emit", "channel": "pi-agent-ask:submit",
                "data": {
                    "version": 1, "requestId": "r-kept", "flowId": "tool:kept",
                    "response": {"kind": "answer", "answers": {"q": {"values": ["a"]}}},
                },
            }).encode() + b"\n"
        )  # fmt: skip
        for client in (old, watcher):
            lines = [client.read() for _ in range(3)]  # a ping among them would fail this
            assert [line.get("channel") for line in lines] == [
                "pi-agent-ask:started",
                "pi-agent-ask:completed",
                "pi-agent-ask:submit-result",
            ]
        record = tool_end(pi, "kept", since)
        assert record["result"]["details"]["answers"]["q"]["values"] == ["a"]
    finally:
        for client in (old, watcher, silent):
            client.close()


def test_a_hello_with_a_bad_pong_is_refused(pi: PiProcess) -> None:
    raw = Raw(pi.socket_path, None)
    try:
        raw.sock.sendall(json.dumps(answerer(None) | {"pong": "yes"}).encode() + b"\n")
        reply = raw.read()
        assert (reply["type"], reply["code"]) == ("error", "bad_message")
        assert pi.relay_clients()[0] == 0
    finally:
        raw.close()


def test_a_form_the_relay_did_not_provide_stays_open_when_its_answerer_is_dropped(
    pi: PiProcess,
) -> None:
    if pi.standin is None:
        pytest.skip("opens a form directly (as the TUI does): a stand-in command")
    silent = Raw(pi.socket_path, answerer(1))
    try:
        flow_id = pi.open_form(single_question())
        assert silent.read_until("goodbye")[-1]["reason"] == "unresponsive"
    finally:
        silent.close()
    # the host's own form (a TUI's, a resumed one) is not the relay's to fail
    assert flow_id in pi.open_flow_ids()
    later = Raw(pi.socket_path, answerer(None))
    try:
        assert flow_id in later.replays
    finally:
        later.close()
    assert pi.cancel_form(flow_id)


def test_pings_can_be_turned_off(pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path) -> None:
    with running_pi(
        pi_installation,
        tmp_path / "pi",
        shared_tmp=shared_tmp,
        extra_env={"PI_ASK_RELAY_PING_MS": "0"},
    ) as quiet:
        raw = Raw(quiet.socket_path, None)
        try:
            assert raw.hello["ping"] == 0
        finally:
            raw.close()


def test_another_answerer_within_the_grace_period_gets_the_form_of_a_dropped_one(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    patient = {**LIMITS, "PI_ASK_RELAY_GRACE_MS": "60000"}
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, extra_env=patient
    ) as pi:
        silent = Raw(pi.socket_path, answerer(1))
        try:
            # Alive until the form reaches it, then silent: dropped while it provided the form.
            form_reached = silent.alive_until("event")
            since = call(pi, "handed-over")
            assert form_reached()[-1]["data"]["flowId"] == "tool:handed-over"
            assert silent.read_until("goodbye")[-1]["reason"] == "unresponsive"
        finally:
            silent.close()
        # dropped while it provided the form: the form waits for the grace period ...
        assert "tool:handed-over" in pi.open_flow_ids()
        other = Raw(pi.socket_path, answerer(1))
        try:
            assert other.replays == ["tool:handed-over"]  # ... and the next answerer gets it
            other.sock.sendall(
                json.dumps({
                    "type": "emit", "channel": "pi-agent-ask:submit",
                    "data": {
                        "version": 1, "requestId": "r-over", "flowId": "tool:handed-over",
                        "response": {"kind": "answer", "answers": {"q": {"values": ["b"]}}},
                    },
                }).encode() + b"\n"
            )  # fmt: skip
            channels = {line.get("channel") for line in other.read_until("event", pong=True)}
            assert channels & {"pi-agent-ask:completed", "pi-agent-ask:submit-result"}
        finally:
            other.close()
        record = tool_end(pi, "handed-over", since)
        assert record.get("isError") is False
        assert record["result"]["details"]["answers"]["q"]["values"] == ["b"]
