"""What the fault tests share: an answering bridge that records every outcome, a ledger that
counts every form, a forwarder in its own process, and a bridge in its own process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from pi_ask_core import AnswerResponse, FlowHandle, RemoteAnswer
from pi_ask_sdk import Answer, AnswerBuilder, BridgeClient, FlowView, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, FleetPi
from pi_ask_sdk.forms import F
from pi_ask_sdk.outcomes import RespondOutcome, SubmitNotSent, SubmitTimedOut
from pi_ask_sdk.serving import serve
from tests.interrupts import default_sigint
from tests.relay.fake_relay import FakeRelay

ROOT = Path(__file__).resolve().parents[2]


def yes(flow: FlowView[F]) -> Answer[F]:
    question = flow.question("deploy")
    return AnswerBuilder(flow).select(question, question.value("yes")).build()


def local_no() -> object:
    """What the host's own user answers (FlowHandle.complete)."""
    return AnswerResponse(answers={"deploy": RemoteAnswer(values=["no"])})


class Retrying:
    """A bridge's handler for ``serve(handler, fleet)`` that answers each form "yes", each in
    its own task, under a request id of its own (``prefix``, then the tool call id), retrying
    under that id while the outcome says it may (not sent, timed out; not a form another
    answered first) and its client is open; a form whose client ended is answered by the next
    client ``serve`` gives its Pi. Forms for which ``waits(flow)`` holds wait for ``gate``.
    ``shown`` holds every form shown, and ``changed`` is set at each; every outcome is kept by
    flow id."""

    def __init__(
        self,
        prefix: str = "r",
        *,
        gate: asyncio.Event | None = None,
        changed: asyncio.Event | None = None,
        waits: Callable[[FlowView], bool] = lambda flow: True,
    ) -> None:
        self.prefix = prefix
        self.gate = gate or asyncio.Event()
        self.changed = changed or asyncio.Event()
        self.waits = waits
        self.shown: set[str] = set()
        self.outcomes: dict[str, list[RespondOutcome]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def handler(self, client: BridgeClient, pi: FleetPi) -> None:
        async for flow in client.flows():
            self.shown.add(flow.flow_id)
            self.changed.set()
            self._tasks.append(asyncio.create_task(self._answer(client, flow)))

    async def _answer(self, client: BridgeClient, flow: FlowView) -> None:
        if self.waits(flow):
            await self.gate.wait()
        request_id = f"{self.prefix}-{flow.tool_call_id}"
        for _ in range(60):  # (bounded: each respond is bounded too)
            outcome = await client.respond(flow, yes(flow), request_id=request_id, timeout=5)
            self.outcomes.setdefault(flow.flow_id, []).append(outcome)
            if not isinstance(outcome, (SubmitNotSent, SubmitTimedOut)) or not client.is_open:
                return
            if isinstance(outcome, SubmitNotSent) and outcome.reason == "flow_completed":
                return  # it ended first (another replica answered it)

    async def settled(self, timeout: float) -> None:
        """Until every answer's task ended (each respond bounded), at most ``timeout`` s."""
        await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), timeout)

    def accepted(self, flow_id: str) -> int:
        return sum(isinstance(o, SubmitAccepted) for o in self.outcomes.get(flow_id, []))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def serving(*replicas: tuple[Retrying, Fleet]) -> AsyncIterator[None]:
    """``serve(handler, fleet)`` for each ``(handler, fleet)`` pair (its request ids prefixed
    with the fleet's bridge id) while the block runs; then every ``serve`` ends and every
    answer's task is cancelled (each wait bounded)."""
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(serve(r.handler, f, stop=stop, request_id_prefix=f.bridge_id))
        for r, f in replicas
    ]
    try:
        yield
    finally:
        stop.set()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 15)
        for replica, _ in replicas:
            await replica.stop()


class Answerer:
    """An in-process bridge over NATS: every form it sees is answered "yes" once ``gate`` is
    set, each in its own task; every outcome is kept by flow id."""

    def __init__(self, fleet: Fleet, host: str, pid: int, *, only: str = "") -> None:
        self.only = only  # answer only the forms whose tool call id starts with this
        self.fleet = fleet
        self.host = host
        self.pid = pid
        self.gate = asyncio.Event()
        self.seen: dict[str, str] = {}  # flow id -> tool call id
        self.outcomes: dict[str, list[RespondOutcome]] = {}
        self._seen_changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._answers: list[asyncio.Task[None]] = []
        self.client: BridgeClient | None = None

    async def start(self) -> None:
        opened = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(opened))
        await asyncio.wait_for(opened.wait(), 20)

    async def _run(self, opened: asyncio.Event) -> None:
        async with BridgeClient(self.fleet.transport(self.host, self.pid)) as client:
            self.client = client
            flows = client.flows()
            opened.set()
            async for flow in flows:
                if not (flow.tool_call_id or "").startswith(self.only):
                    continue
                self.seen[flow.flow_id] = flow.tool_call_id or ""
                self._seen_changed.set()
                self._answers.append(asyncio.get_running_loop().create_task(self._answer(flow)))

    async def _answer(self, flow: FlowView) -> None:
        await self.gate.wait()
        assert self.client is not None
        outcome = await self.client.respond(flow, yes(flow), timeout=30)
        self.outcomes.setdefault(flow.flow_id, []).append(outcome)
        self._seen_changed.set()

    async def wait_outcomes(self, count: int, timeout: float = 30.0) -> None:
        """Until ``count`` responds have their outcome (each bounded by its own timeout)."""

        async def enough() -> None:
            while sum(len(v) for v in self.outcomes.values()) < count:
                self._seen_changed.clear()
                await self._seen_changed.wait()

        await asyncio.wait_for(enough(), timeout)

    async def wait_seen(self, count: int, timeout: float = 20.0) -> None:
        async def enough() -> None:
            while len(self.seen) < count:
                self._seen_changed.clear()
                await self._seen_changed.wait()

        await asyncio.wait_for(enough(), timeout)

    async def wait_settled(self, timeout: float = 60.0) -> None:
        """Until every respond started so far has its outcome."""

        async def settled() -> None:
            while sum(len(v) for v in self.outcomes.values()) < len(self._answers):
                self._seen_changed.clear()
                await self._seen_changed.wait()

        await asyncio.wait_for(settled(), timeout)

    def accepted(self, flow_id: str) -> int:
        return sum(isinstance(o, SubmitAccepted) for o in self.outcomes.get(flow_id, []))

    async def stop(self) -> None:
        for task in [*self._answers, *([self._task] if self._task else [])]:
            task.cancel()
        for task in [*self._answers, *([self._task] if self._task else [])]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def all_done(handles: list[FlowHandle], timeout: float) -> None:
    """Until no handle is open (each completed or disposed), at most ``timeout`` s."""
    left = asyncio.Event()

    def check(_: FlowHandle) -> None:
        if not any(h.is_open for h in handles):
            left.set()

    for handle in handles:
        handle.add_done_callback(check)
    check(handles[0])
    try:
        await asyncio.wait_for(left.wait(), timeout)
    except asyncio.TimeoutError:
        still = [h.tool_call_id for h in handles if h.is_open]
        raise AssertionError(f"forms still open after {timeout:g} s: {still}") from None


def submits_per_request(relay: FakeRelay) -> Counter[tuple[str, str]]:
    """How many times the relay was asked to emit each (flowId, requestId) submit."""
    counts: Counter[tuple[str, str]] = Counter()
    for message in relay.received:
        if message.get("type") == "emit":
            data = message["data"]
            counts[(data["flowId"], data["requestId"])] += 1
    return counts


def relay_answered(relay: FakeRelay, flow_id: str) -> int:
    """How many submits for ``flow_id`` the relay was asked to emit."""
    return sum(n for (flow, _), n in submits_per_request(relay).items() if flow == flow_id)


def assert_each_form_once(
    relay: FakeRelay, handles: list[FlowHandle], accepted: Counter[str], local: set[str]
) -> None:
    """The ledger: every form ended; each answered remotely was accepted exactly once (and
    the host got each submit once); forms the host's user ended were accepted by no bridge."""
    for handle in handles:
        assert handle.state == "completed", (handle.tool_call_id, handle.state)
        if handle.flow_id in local:
            assert accepted[handle.flow_id] == 0, handle.tool_call_id
        else:
            assert accepted[handle.flow_id] == 1, (handle.tool_call_id, accepted[handle.flow_id])
    doubled = {key: n for key, n in submits_per_request(relay).items() if n > 1}
    assert doubled == {}, f"submits the host was given twice: {doubled}"


class ForwarderProcess:
    """``pi-ask forward`` in its own process (so that it can be killed); its log lines are
    kept (``wait_log``)."""

    def __init__(self, url: str, host_id: str, directory: Path) -> None:
        self.args = [
            sys.executable, "-m", "pi_ask_sdk.cli", "forward", "--nats", url,
            "--host-id", host_id, "--relay-dir", str(directory),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None
        self.log: list[str] = []
        self._logged = asyncio.Event()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, env=env, preexec_fn=default_sigint,
        )  # fmt: skip
        self.process = process
        self.log = log = []  # this process's: a killed one's last lines go to its own
        loop = asyncio.get_running_loop()
        stderr = process.stderr
        assert stderr is not None

        def line(text: str) -> None:
            log.append(text)
            self._logged.set()

        def read() -> None:
            for raw in stderr:
                with contextlib.suppress(RuntimeError):  # (the loop closed)
                    loop.call_soon_threadsafe(line, raw.decode("utf-8", "replace"))

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()

    async def wait_log(self, text: str, timeout: float = 30.0) -> None:
        """Until the running process logged a line holding ``text``."""

        async def heard() -> None:
            while not any(text in line for line in self.log):
                self._logged.clear()
                await self._logged.wait()

        await asyncio.wait_for(heard(), timeout)

    def interrupt(self, timeout: float = 20.0) -> int:
        """Ctrl-C (SIGINT: the child takes it as a terminal's foreground job does), then its
        exit status."""
        process, self.process = self.process, None
        assert process is not None
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout)
        finally:
            self._done(process)

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait(10)
            self._done(process)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
            self._done(process)

    def _done(self, process: subprocess.Popen[bytes]) -> None:
        if self._reader is not None:
            self._reader.join(10)  # (its pipe closed with the process)
            self._reader = None
        if process.stderr is not None:
            process.stderr.close()


class BridgeProcess:
    """``tests/fleet/bridge_proc.py`` in its own process: answers the forms whose tool call id
    starts with its prefix and prints one JSON line per outcome (and ``ready`` once open)."""

    def __init__(
        self, url: str, host_id: str, pid: int, prefix: str, *, serve_timeout: float = 0.0
    ) -> None:
        """``serve_timeout``: serve every Pi (``--serve``) with that forwarder timeout."""
        module = [sys.executable, "-m", "tests.fleet.bridge_proc"]
        if serve_timeout:
            self.args = [*module, "--serve", url, str(serve_timeout), prefix]
        else:
            self.args = [*module, url, host_id, str(pid), prefix]
        self.process: subprocess.Popen[bytes] | None = None
        self.lines: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            self.args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        self.process = process
        loop = asyncio.get_running_loop()
        stdout = process.stdout
        assert stdout is not None

        def read() -> None:
            for raw in stdout:
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.call_soon_threadsafe(self.lines.put_nowait, json.loads(raw))

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()

    async def next(self, timeout: float = 20.0) -> dict[str, str]:
        return await asyncio.wait_for(self.lines.get(), timeout)

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait(10)
        if self._reader is not None:
            self._reader.join(10)
