"""A harness for a real Pi in RPC mode with the relay and the test host (tests and bench).

``pi_env(flavour)`` asks ``scripts/pi-env.sh`` where node and Pi are; ``PiProcess`` starts Pi
with ``--mode rpc --no-extensions --no-session -e <relay> -e <test host> --model
pi-ask-faux/scripted`` in an isolated home (``HOME``, ``PI_CODING_AGENT_DIR``, its own relay
directory; ``TMPDIR`` shared per test session so jiti's cache is reused), sends RPC commands and
prompts, and reads stdout records on a reader thread. Every wait has a deadline; the only
polling is for the socket file to appear (no event announces it). ``stop()`` always cleans up.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    BridgeClient,
    BridgeEvent,
    ClientStream,
    FlowView,
)
from pi_ask_sdk.testing import unchecked_answer
from pi_ask_sdk.transports.relay import RelayTransport

ROOT = Path(__file__).resolve().parents[2]
RELAY_TS = ROOT / "pi_ask_sdk" / "relay" / "pi-ask-relay.ts"
TEST_HOST_TS = ROOT / "tests" / "integration" / "extensions" / "test-host.ts"
CONFORMANCE_TS = ROOT / "tests" / "integration" / "extensions" / "conformance.ts"
FAUX_MODEL = "pi-ask-faux/scripted"

Flavour = Literal["current", "legacy"]
Record = dict[str, Any]

WAIT = 10.0
"""Default upper bound of one wait on Pi (seconds); Pi answers in milliseconds."""


class PiNotInstalled(RuntimeError):
    """The requested Pi flavour is not installed (the message says how to install it)."""


class PiFailed(RuntimeError):
    """Pi did not do what was expected in time (the message carries its stderr tail)."""


@dataclass(frozen=True)
class PiEnv:
    flavour: Flavour
    node: str
    pi_cli: str
    version: str
    node_modules: str


def flavour_from_env(env: Mapping[str, str] | None = None) -> Flavour:
    value = (os.environ if env is None else env).get("PI_ASK_PI_FLAVOUR", "current") or "current"
    if value not in ("current", "legacy"):
        raise ValueError(f"PI_ASK_PI_FLAVOUR must be 'current' or 'legacy', not {value!r}")
    return "legacy" if value == "legacy" else "current"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip the test outside CI; fail it loudly with ``CI=true``."""
    import pytest

    if in_ci():
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def install_hint(flavour: Flavour) -> str:
    if flavour == "legacy":
        return "run `bash scripts/install-pi.sh --legacy` or `tox -e pi-legacy`"
    return "run `bash scripts/install-pi.sh` or `tox -e pi`"


def pi_env(flavour: Flavour) -> PiEnv:
    """Where node and Pi are for ``flavour``; ``PiNotInstalled`` says how to install it."""
    args = ["bash", str(ROOT / "scripts" / "pi-env.sh")]
    if flavour == "legacy":
        args.append("--legacy")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        raise PiNotInstalled(
            f"Pi ({flavour}) is not installed: {install_hint(flavour)} "
            f"({proc.stderr.strip() or 'pi-env.sh failed'})"
        )
    values = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    return PiEnv(
        flavour=flavour,
        node=values["NODE"],
        pi_cli=values["PI_CLI"],
        version=values["PI_VERSION"],
        node_modules=values["PI_NODE_MODULES"],
    )


def make_private_dir(path: Path, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    return path


class PiProcess:
    """One Pi process in RPC mode. Use as a context manager, or call ``stop()``."""

    def __init__(
        self,
        env: PiEnv,
        workdir: Path,
        *,
        shared_tmp: Path | None = None,
        relay_dir: Path | None = None,
        relay: bool = True,
        test_host: bool = True,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.env = env
        self.workdir = workdir
        self.home = make_private_dir(workdir / "home")
        self.agent_dir = make_private_dir(workdir / "agent")
        self.tmp = make_private_dir(shared_tmp if shared_tmp is not None else workdir / "tmp")
        self.relay_dir = relay_dir if relay_dir is not None else workdir / "relay"
        self.relay = relay
        self.test_host = test_host
        self.extra_env = dict(extra_env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.records: list[Record] = []
        self.stderr_lines: list[str] = []
        self._cond = threading.Condition()
        self._ids = 0
        self._lock = threading.RLock()
        self._threads: list[threading.Thread] = []
        self.exited = threading.Event()

    # --- lifecycle ---

    def command_line(self) -> list[str]:
        args = [self.env.node, self.env.pi_cli, "--mode", "rpc", "--no-extensions", "--no-session"]
        if self.relay:
            args += ["-e", str(RELAY_TS)]
        if self.test_host:
            args += ["-e", str(TEST_HOST_TS), "--model", FAUX_MODEL]
        return args

    def environment(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PI_", "XDG_")) and key not in ("NODE_OPTIONS",)
        }
        env.update(
            HOME=str(self.home),
            PI_CODING_AGENT_DIR=str(self.agent_dir),
            TMPDIR=str(self.tmp),
            PI_OFFLINE="1",
            PI_TELEMETRY="0",
            PI_ASK_RELAY_DIR=str(self.relay_dir),
        )
        env.update(self.extra_env)
        return env

    def start(self) -> PiProcess:
        self.proc = subprocess.Popen(
            self.command_line(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.workdir,
            env=self.environment(),
        )
        for target in (self._read_stdout, self._read_stderr):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def socket_path(self) -> Path:
        return self.relay_dir / f"pi-{self.pid}.sock"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> int | None:
        """Close stdin (Pi quits), wait; kill if it does not. Idempotent."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        for thread in self._threads:
            thread.join(timeout)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        return proc.returncode

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def __enter__(self) -> PiProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- reading ---

    def _read_stdout(self) -> None:
        proc = self.proc
        assert proc is not None
        assert proc.stdout is not None
        for raw in proc.stdout:  # bytes lines: split on b"\n" only
            try:
                record = json.loads(raw)
            except ValueError:
                record = {"type": "_non_json", "text": raw.decode("utf-8", "replace")}
            if not isinstance(record, dict):
                record = {"type": "_non_json", "value": record}
            with self._cond:
                self.records.append(record)
                self._cond.notify_all()
        proc.wait()  # reap at once, so the pid is really gone
        self.exited.set()
        with self._cond:
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        proc = self.proc
        assert proc is not None
        assert proc.stderr is not None
        for raw in proc.stderr:
            with self._cond:
                self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def stderr_tail(self, lines: int = 20) -> str:
        with self._cond:
            return "\n".join(self.stderr_lines[-lines:])

    def wait_record(
        self, predicate: Callable[[Record], bool], *, since: int = 0, timeout: float = WAIT
    ) -> Record:
        """The first record from index ``since`` on that matches; ``PiFailed`` at the deadline."""
        deadline = time.monotonic() + timeout
        index = since
        with self._cond:
            while True:
                while index < len(self.records):
                    record = self.records[index]
                    index += 1
                    if predicate(record):
                        return record
                left = deadline - time.monotonic()
                if left <= 0 or (self.exited.is_set() and index >= len(self.records)):
                    break
                self._cond.wait(left)
        why = "exited" if self.exited.is_set() else f"gave no matching record in {timeout:g} s"
        raise PiFailed(f"Pi {why}; stderr:\n{self.stderr_tail()}")

    def mark(self) -> int:
        with self._cond:
            return len(self.records)

    # --- writing ---

    def send(self, message: Mapping[str, object]) -> None:
        proc = self.proc
        assert proc is not None
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def request(self, command: Mapping[str, object], *, timeout: float = WAIT) -> Record:
        """Send an RPC command and wait for its ``response`` record."""
        with self._lock:
            self._ids += 1
            rid = f"h{self._ids}"
        since = self.mark()
        self.send({**command, "id": rid})
        response = self.wait_record(
            lambda r: r.get("type") == "response" and r.get("id") == rid,
            since=since,
            timeout=timeout,
        )
        if response.get("success") is False:
            raise PiFailed(f"Pi refused {command.get('type')}: {response.get('error')}")
        return response

    def prompt(self, message: str, *, timeout: float = WAIT) -> Record:
        return self.request({"type": "prompt", "message": message}, timeout=timeout)

    def test_command(self, name: str, args: str, *, timeout: float = WAIT) -> dict[str, Any]:
        """Run ``/pi-ask-test-<name> <args>`` and return its ``pi-ask-test`` report."""
        with self._lock:
            since = self.mark()
            self.prompt(f"/pi-ask-test-{name} {args}", timeout=timeout)
            record = self.wait_record(
                lambda r: _report(r, name) is not None, since=since, timeout=timeout
            )
        report = _report(record, name)
        assert report is not None
        return report

    def open_form(
        self,
        params: Mapping[str, object],
        *,
        tool_call_id: str | None = None,
        timeout: float = WAIT,
    ) -> str:
        spec: dict[str, object] = {"params": params}
        if tool_call_id is not None:
            spec["toolCallId"] = tool_call_id
        report = self.test_command("open", json.dumps(spec), timeout=timeout)
        if not report.get("ok"):
            raise PiFailed(f"the test host refused the form: {report}")
        return str(report["flowId"])

    def cancel_form(self, flow_id: str) -> bool:
        return bool(self.test_command("cancel", flow_id).get("ok"))

    def dispose_form(self, flow_id: str) -> bool:
        return bool(self.test_command("dispose", flow_id).get("ok"))

    def open_flow_ids(self) -> list[str]:
        return list(self.test_command("list", "").get("flowIds", []))

    def new_session(self, *, timeout: float = WAIT) -> Record:
        return self.request({"type": "new_session"}, timeout=timeout)

    # --- the socket ---

    def wait_socket(self, *, timeout: float = WAIT) -> Path:
        """Poll (no event announces it) until the relay socket exists with mode 0600."""
        path = self.socket_path
        deadline = time.monotonic() + timeout
        while True:
            try:
                if stat.S_IMODE(os.lstat(path).st_mode) == 0o600:
                    return path
            except FileNotFoundError:
                pass
            if not self.alive():
                raise PiFailed(
                    f"Pi exited before its relay listened; stderr:\n{self.stderr_tail()}"
                )
            if time.monotonic() > deadline:
                raise PiFailed(f"no relay socket {path} after {timeout:g} s:\n{self.stderr_tail()}")
            time.sleep(0.005)


def _report(record: Record, command: str) -> dict[str, Any] | None:
    if record.get("type") != "extension_ui_request" or record.get("method") != "notify":
        return None
    message = record.get("message")
    if not isinstance(message, str) or not message.startswith("pi-ask-test "):
        return None
    try:
        report = json.loads(message[len("pi-ask-test ") :])
    except ValueError:
        return None
    if not isinstance(report, dict) or report.get("command") != command:
        return None
    return report


@contextmanager
def running_pi(env: PiEnv, workdir: Path, **kwargs: Any) -> Iterator[PiProcess]:
    """A started Pi whose relay listens (when loaded); always stopped afterwards."""
    pi = PiProcess(env, workdir, **kwargs)
    try:
        pi.start()
        if pi.relay:
            pi.wait_socket()
        yield pi
    finally:
        pi.stop()


def single_question(qid: str = "q", *, required: bool = False) -> dict[str, object]:
    """A one-question single-choice form (ask_user input)."""
    return {
        "title": "Choose",
        "questions": [
            {
                "id": qid,
                "prompt": "Which one?",
                "required": required,
                "options": [
                    {"value": "a", "label": "Alpha"},
                    {"value": "b", "label": "Beta", "recommended": True},
                ],
            }
        ],
    }


# --- SDK helpers (bounded waits only) ------------------------------------------------------------

TIMEOUT = 5.0
"""Upper bound of one wait on the SDK side in the tests."""


@asynccontextmanager
async def relay_client(socket: Path, **options: Any) -> AsyncIterator[BridgeClient]:
    """A ``BridgeClient`` over a ``RelayTransport`` to ``socket``, closed afterwards."""
    async with BridgeClient(RelayTransport(socket, **options)) as client:
        yield client


async def next_flow(stream: ClientStream[FlowView], flow_id: str) -> FlowView:
    """The stream's view of ``flow_id``, skipping other forms; each wait bounded."""
    for _ in range(1000):
        view = await stream.next(timeout=TIMEOUT)
        if view.flow_id == flow_id:
            return view
    raise AssertionError(f"flow {flow_id} never started")


async def next_event(
    stream: ClientStream[BridgeEvent], kind: str, flow_id: str | None = None
) -> BridgeEvent:
    """The next event of ``kind`` (for ``flow_id`` when given); each wait bounded."""
    for _ in range(1000):
        event = await stream.next(timeout=TIMEOUT)
        if event.kind != kind:
            continue
        if event.kind == "started":
            found: str | None = event.flow.flow_id
        elif event.kind == "completed":
            found = event.flow_id
        else:
            found = None
        if flow_id is None or found == flow_id:
            return event
    raise AssertionError(f"no {kind} event for {flow_id}")


def choose(flow: FlowView, value: str) -> Answer:
    """Select option ``value`` of the form's first question (checked by the SDK)."""
    question = flow.questions[0]
    return AnswerBuilder(flow).select(question, question.option(value)).build()


def invalid_answer(flow: FlowView) -> Answer:
    """An answer the host refuses as ``invalid_answer`` (an option value the form lacks), built
    past the SDK's local checks on purpose."""
    return unchecked_answer(flow, {flow.questions[0].id: ["nope"]})


async def settle() -> None:
    """Let the event loop run callbacks that are already due (no waiting on time)."""
    await asyncio.sleep(0)
