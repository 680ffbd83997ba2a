"""``PiProcess``: one Pi in RPC mode, its records read on a thread, every wait bounded."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, cast

from typing_extensions import Self, TypedDict, Unpack

from pi_ask_core import AskResult
from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.forms import FlowId
from pi_ask_sdk.responses import Answer, Cancel, UncheckedAnswer
from pi_ask_sdk.testing._params import AskParams
from pi_ask_sdk.testing.errors import PiFailed, UnknownFlow
from pi_ask_sdk.testing.standin import StandinThread, standin_extension_path

from ._install import PiEnv
from ._records import PiRecord, StandinReport, report_of

if TYPE_CHECKING:
    from pi_ask_wire import RemoteResponse

__all__ = ["FAUX_MODEL", "WAIT", "PiProcess", "RelayOptions", "make_private_dir"]

FAUX_MODEL = "pi-ask-faux/scripted"
"""The stand-in's scripted model: a prompt ``CALL ask_user#<id> <json>`` makes it call the tool."""

WAIT = 10.0
"""Default upper bound of one wait on Pi (seconds); Pi answers in milliseconds."""


class RelayOptions(TypedDict, total=False):
    """The ``RelayTransport`` options ``PiProcess.client()`` passes on (its socket is Pi's)."""

    hello_timeout: float
    reconnect: bool
    reconnect_timeout: float
    backoff_initial: float
    backoff_max: float
    max_line_bytes: int
    foreign_results: bool


def make_private_dir(path: Path, mode: int = 0o700) -> Path:
    """Create ``path`` (and its parents) if needed, set its mode (owner only), return it."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    return path


def _relay_extension() -> Path:
    from pi_ask_sdk.transports.relay import relay_extension_path

    return relay_extension_path()


class PiProcess:
    """One Pi process in RPC mode. Use as a context manager, or call ``stop()``.

    RPC mode is headless (``mode``): a form Pi's model opens (``call_ask_user``) opens only while
    a bridge that answers forms is connected to the relay (``pi.client()`` is one); with none,
    the model gets the host's non-interactive (cancelled) result at once. ``wait_answerer()``
    waits for one.

    Pi runs with ``--no-extensions`` (only the extensions given here load) unless
    ``installed_packages``: then the packages ``pi install`` put in its agent directory
    (``install_package``) load too.

    With ``test_host`` (the default) it loads the stand-in host, backed by ``standin`` (a
    ``StandinThread``; one of its own when not given), and the scripted model
    ``pi-ask-faux/scripted``. With ``host_extension`` (a ``pi-agent-ask`` checkout or file) that
    extension is the host instead; forms then open through the scripted model's tool calls.

    Waits are bounded (``WAIT`` seconds by default) and raise ``PiFailed`` at their deadline,
    naming what was awaited and the tail of Pi's stderr.

    Args:
        env: The installed Pi to run (``install_pi()`` or ``locate_pi()``).
        workdir: A private directory for Pi's home, agent directory, temp and relay directory.
        shared_tmp: The temp directory (``TMPDIR``), when shared with other processes.
        relay_dir: The relay directory (default: ``workdir/relay``).
        relay: Load the relay extension.
        test_host: Load the stand-in host and the scripted model.
        host_extension: Load this ``pi-agent-ask`` extension as the host instead.
        standin: The stand-in server to use (default: one of its own).
        present_single_as_multi: The stand-in's host option.
        extra_env: More environment variables for Pi.
        extra_args: More command-line arguments for Pi.
        installed_packages: Load the packages ``pi install`` put in the agent directory.
    """

    def __init__(
        self,
        env: PiEnv,
        workdir: Path,
        *,
        shared_tmp: Path | None = None,
        relay_dir: Path | None = None,
        relay: bool = True,
        test_host: bool = True,
        host_extension: Path | None = None,
        standin: StandinThread | None = None,
        present_single_as_multi: bool = False,
        extra_env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        installed_packages: bool = False,
    ) -> None:
        self.env = env
        self.workdir = workdir
        self.home = make_private_dir(workdir / "home")
        self.agent_dir = make_private_dir(workdir / "agent")
        self.tmp = make_private_dir(shared_tmp if shared_tmp is not None else workdir / "tmp")
        self.relay_dir = relay_dir if relay_dir is not None else workdir / "relay"
        self.relay = relay
        self.test_host = test_host
        self.host_extension = host_extension
        self.standin = standin
        self._own_standin: StandinThread | None = None
        self._present_single_as_multi = present_single_as_multi
        self._tool_calls = 0
        self.extra_env = dict(extra_env or {})
        self.extra_args = list(extra_args)
        self.installed_packages = installed_packages
        self.proc: subprocess.Popen[bytes] | None = None
        self.records: list[PiRecord] = []
        self.stderr_lines: list[str] = []
        self._cond = threading.Condition()
        self._ids = 0
        self._lock = threading.RLock()
        self._threads: list[threading.Thread] = []
        self.exited = threading.Event()
        # Where the stand-in's `completed` list stood when each flow was opened here: its result
        # is the first completion of that flow id after it, from this Pi process.
        self._flow_marks: dict[str, int] = {}
        self._tool_marks: dict[str, int] = {}  # the same for a tool call's record here

    # --- lifecycle ---

    def command_line(self) -> list[str]:
        """The command that starts Pi (node, Pi's CLI and its flags)."""
        args = [self.env.node, self.env.pi_cli, "--mode", "rpc", "--no-session"]
        if not self.installed_packages:  # else: what `pi install` put in its agent directory
            args.append("--no-extensions")
        if self.relay:
            args += ["-e", str(_relay_extension())]
        if self.host_extension is not None:
            args += ["-e", str(self.host_extension)]
        if self.test_host or self.host_extension is not None:
            args += ["-e", str(standin_extension_path()), "--model", FAUX_MODEL]
        return args + self.extra_args

    def environment(self) -> dict[str, str]:
        """Pi's environment: this one without ``PI_*``/``XDG_*``, isolated and offline."""
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
        if self.host_extension is not None:
            env["PI_ASK_STANDIN_FAUX"] = "1"  # the scripted model only: the host is theirs
        elif self.test_host and self.standin is not None:
            env.update(self.standin.environment())
        env.update(self.extra_env)
        return env

    def install_package(self, source: str, *, timeout: float = 120) -> None:
        """``pi install <source>`` into this Pi's own agent directory (before ``start``);
        ``PiFailed`` with Pi's output when it fails or outlasts ``timeout``."""
        command = [self.env.node, self.env.pi_cli, "install", source]
        try:
            done = subprocess.run(
                command,
                env=self.environment(),
                cwd=self.workdir,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise PiFailed(f"`pi install {source}` did not finish in {timeout:g} s") from None
        except OSError as error:
            raise PiFailed(f"cannot run {command[0]} (Pi {self.env.flavour}): {error}") from error
        if done.returncode != 0:
            raise PiFailed(
                f"`pi install {source}` failed (exit status {done.returncode}):\n"
                f"{done.stdout}{done.stderr}".rstrip()
            )

    def start(self) -> Self:
        """Start Pi (and the stand-in server, when it runs one of its own).

        Raises:
            PiFailed: Pi's process could not start.
        """
        if self.test_host and self.host_extension is None and self.standin is None:
            self._own_standin = StandinThread(present_single_as_multi=self._present_single_as_multi)
            self.standin = self._own_standin.start()
        try:
            self._launch()
        except OSError as error:  # e.g. an empty or foreign node binary
            self._stop_standin()
            raise PiFailed(
                f"cannot start Pi ({self.env.flavour}) with {self.env.node}: {error}; "
                "install_pi() verifies and repairs the install"
            ) from error
        return self

    def _launch(self) -> None:
        """Start Pi's process and the threads that read it (here: RPC on pipes)."""
        self.proc = subprocess.Popen(
            self.command_line(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.workdir,
            env=self.environment(),
            # Its own session: a Ctrl-C in the terminal reaches only this process, which
            # then stops Pi by closing its stdin, so Pi shuts down and the relay removes its
            # socket (killed by the SIGINT itself, Pi would leave a stale socket behind).
            start_new_session=True,
        )
        for target in (self._read_stdout, self._read_stderr):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    @property
    def pid(self) -> int:
        """Pi's process id (once started)."""
        assert self.proc is not None
        return self.proc.pid

    @property
    def socket_path(self) -> Path:
        """Where Pi's relay listens: ``<relay_dir>/pi-<pid>.sock``."""
        return self.relay_dir / f"pi-{self.pid}.sock"

    def alive(self) -> bool:
        """Whether Pi's process is running."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> int | None:
        """Close stdin (Pi quits), wait; kill if it does not. Idempotent."""
        proc = self.proc
        if proc is None:
            self._stop_standin()
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
        self._stop_standin()
        return proc.returncode

    def _stop_standin(self) -> None:
        own, self._own_standin = self._own_standin, None
        if own is not None:
            own.stop()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to Pi (``stop()`` still cleans up after it)."""
        assert self.proc is not None
        self.proc.send_signal(sig)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- reading ---

    def _read_stdout(self) -> None:
        proc = self.proc
        assert proc is not None
        assert proc.stdout is not None
        for raw in proc.stdout:  # bytes lines: split on b"\n" only
            record: PiRecord
            try:
                decoded: object = json.loads(raw)
            except ValueError:
                record = {"type": "_non_json", "text": raw.decode("utf-8", "replace")}
            else:
                if isinstance(decoded, dict):
                    record = cast(PiRecord, decoded)  # Pi's own JSON: the keys read are typed
                else:
                    record = {"type": "_non_json", "value": decoded}
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
        """The last ``lines`` lines Pi wrote to stderr."""
        with self._cond:
            return "\n".join(self.stderr_lines[-lines:])

    def wait_record(
        self, predicate: Callable[[PiRecord], bool], *, since: int = 0, timeout: float = WAIT
    ) -> PiRecord:
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
        """How many records were read so far: pass it as ``since`` to wait for later ones."""
        with self._cond:
            return len(self.records)

    # --- writing ---

    def send(self, message: Mapping[str, object]) -> None:
        """Write one RPC command to Pi's stdin (no wait; ``request`` waits for the response)."""
        proc = self.proc
        assert proc is not None
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def request(self, command: Mapping[str, object], *, timeout: float = WAIT) -> PiRecord:
        """Send an RPC command and wait for its ``response`` record.

        Raises:
            PiFailed: Pi refused the command, or did not respond within ``timeout``.
        """
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

    def prompt(self, message: str, *, timeout: float = WAIT) -> PiRecord:
        """Send ``message`` as a prompt (or a ``/command``) and wait for Pi's response record.

        Raises:
            PiFailed: Pi refused it, or did not respond within ``timeout``.
        """
        return self.request({"type": "prompt", "message": message}, timeout=timeout)

    def wait_idle(self, *, timeout: float = WAIT) -> None:
        """Wait until Pi's agent has no run in progress (``PiFailed`` at the deadline).

        Pi refuses a prompt that would start a run while one is still going ("Agent is already
        processing"): after an ``ask_user`` result the scripted model still has its reply to
        give. Pi's ``get_state`` says whether a run is going; while one is, this waits for the
        record that ends it (``agent_settled``; ``agent_end`` on Pi 0.74, which clears its busy
        flag only once that record's listeners ran, hence the check again)."""
        end = "agent_end" if self.env.flavour == "legacy" else "agent_settled"
        deadline = time.monotonic() + timeout
        while True:
            since = self.mark()
            state = self.request({"type": "get_state"}, timeout=max(deadline - time.monotonic(), 0))
            data = state.get("data")
            if not (isinstance(data, dict) and data.get("isStreaming")):
                return
            if self._last_run_record(end) == end and time.monotonic() < deadline:
                continue  # ended: Pi clears its flag once that record was handled
            try:
                self.wait_record(
                    lambda r: r.get("type") == end,
                    since=since,
                    timeout=max(deadline - time.monotonic(), 0),
                )
            except PiFailed:
                if self.exited.is_set():
                    raise
                raise PiFailed(
                    f"Pi's agent was still busy after {timeout:g} s (an ask_user call still "
                    f"open?); stderr:\n{self.stderr_tail()}"
                ) from None

    def _last_run_record(self, end: str) -> str | None:
        """The type of the latest record that starts an agent run or is ``end``."""
        with self._cond:
            for record in reversed(self.records):
                kind = record.get("type")
                if kind in ("agent_start", end):
                    return kind
        return None

    def test_command(self, name: str, args: str, *, timeout: float = WAIT) -> StandinReport:
        """Run ``/pi-ask-test-<name> <args>`` and return its ``pi-ask-test`` report."""
        with self._lock:
            since = self.mark()
            self.prompt(f"/pi-ask-test-{name} {args}", timeout=timeout)
            record = self.wait_record(
                lambda r: report_of(r, name) is not None, since=since, timeout=timeout
            )
        report = report_of(record, name)
        assert report is not None
        return report

    def open_form(
        self,
        params: AskParams,
        *,
        tool_call_id: str | None = None,
        timeout: float = WAIT,
    ) -> FlowId:
        """Open a form; returns its flow id. Refused input raises ``PiFailed`` with the report.

        With the stand-in host this runs ``/pi-ask-test-open`` and returns when the form is open.
        With your own ``host_extension`` the scripted model calls ``ask_user`` instead (the flow
        id is ``tool:<tool_call_id>``; it returns once the call was prompted).
        """
        if self.host_extension is not None:
            return self.call_ask_user(params, tool_call_id=tool_call_id, timeout=timeout)
        spec: dict[str, object] = {"params": params}
        if tool_call_id is not None:
            spec["toolCallId"] = tool_call_id
        mark = self._completed_mark()
        report = self.test_command("open", json.dumps(spec), timeout=timeout)
        if not report.get("ok"):
            raise PiFailed(f"the test host refused the form: {report}")
        flow_id = FlowId(str(report["flowId"]))
        self._flow_marks[flow_id] = mark
        return flow_id

    def _completed_mark(self) -> int:
        standin = self.standin
        return 0 if standin is None else len(standin.server.completed)

    def call_ask_user(
        self,
        params: Mapping[str, object],
        *,
        tool_call_id: str | None = None,
        timeout: float = WAIT,
    ) -> FlowId:
        """Make the scripted model call ``ask_user`` with ``params`` (a real tool call, whose
        result goes back to Pi's agent); returns the flow id ``tool:<tool_call_id>`` at once.
        ``params`` is the raw tool input, checked by the host (invalid input on purpose gives
        the ``invalid_input`` result); ``open_form`` takes only a typed form.

        Waits first (within ``timeout``) until the agent is idle (``wait_idle``): Pi refuses a
        prompt while a run is going, e.g. the model's reply to the previous call's result."""
        if tool_call_id is None:
            self._tool_calls += 1
            tool_call_id = f"pi-ask-call-{self._tool_calls}"
        deadline = time.monotonic() + timeout
        self.wait_idle(timeout=timeout)
        flow_id = FlowId(f"tool:{tool_call_id}")
        self._flow_marks[flow_id] = self._completed_mark()
        since = self.mark()
        self.prompt(
            f"CALL ask_user#{tool_call_id} {json.dumps(params)}",
            timeout=max(deadline - time.monotonic(), 0),
        )
        self._tool_marks[tool_call_id] = since
        return flow_id

    def set_local_answers(self, flow_id: str, answers: Mapping[str, object]) -> StandinReport:
        """What the host's own user typed into ``flow_id`` (not a completion; a cancel reports
        it). Returns the stand-in's report (``ok``, else ``error`` and ``message``)."""
        spec = json.dumps({"flowId": flow_id, "answers": answers})
        return self.test_command("local", spec)

    def complete_form(
        self,
        flow_id: str,
        response: Answer | Cancel | UncheckedAnswer | RemoteResponse,
    ) -> StandinReport:
        """The host's own user submits ``response`` on ``flow_id``: an SDK ``Answer`` /
        ``Cancel`` / ``UncheckedAnswer``, or the raw JSON (``pi_ask_wire.RemoteResponse``).
        Returns the stand-in's report (``ok`` and ``result``, else ``error`` and ``message``)."""
        raw = (
            response.to_builtins()
            if isinstance(response, (Answer, Cancel, UncheckedAnswer))
            else response
        )
        spec = json.dumps({"flowId": flow_id, "response": raw})
        return self.test_command("complete", spec)

    def cancel_form(self, flow_id: str) -> bool:
        """Cancel the form as the host's own user would (stand-in host only); whether it was
        open."""
        return bool(self.test_command("cancel", flow_id).get("ok"))

    def dispose_form(self, flow_id: str) -> bool:
        """Dispose the form without ``completed`` (stand-in host only); whether it was open."""
        return bool(self.test_command("dispose", flow_id).get("ok"))

    def open_flow_ids(self) -> list[FlowId]:
        """The flow ids of the forms open now (stand-in host only)."""
        return [FlowId(i) for i in self.test_command("list", "").get("flowIds", [])]

    def new_session(self, *, timeout: float = WAIT) -> PiRecord:
        """Start a new Pi session (RPC ``new_session``): open forms go with the old one."""
        return self.request({"type": "new_session"}, timeout=timeout)

    # --- results and clients ---

    def result(self, flow_id: FlowId, *, timeout: float = WAIT) -> AskResult:
        """The ``AskResult`` of ``flow_id`` once it completed (waits up to ``timeout``).

        ``flow_id`` is what ``open_form`` or ``call_ask_user`` returned here (a ``FlowId``; the
        flow of tool call ``x`` is ``tool:x``); any other id raises ``UnknownFlow`` at once.
        With the stand-in host, from the host's ``completed`` event; with your own host, from the
        ``ask_user`` tool result (tool flows only). Only this Pi's session that opened the flow
        here counts: the same flow id in another Pi on the same stand-in, in a session before a
        ``new_session``, or in an earlier call with the same tool call id is not this flow.
        Raises ``PiFailed`` when it does not complete within ``timeout``.
        """
        import msgspec

        if flow_id not in self._flow_marks:
            raise UnknownFlow(str(flow_id), tuple(self._flow_marks))

        if self.standin is not None and self.host_extension is None:
            try:
                event = self.standin.server.wait_completed(
                    flow_id,
                    timeout=timeout,
                    pid=self.pid,
                    since=self._flow_marks.get(flow_id, 0),
                )
            except TimeoutError as error:
                raise PiFailed(f"{error}; stderr:\n{self.stderr_tail()}") from None
            return msgspec.convert(msgspec.to_builtins(event.result), AskResult)
        call_id = flow_id.removeprefix("tool:")
        record = self.wait_record(
            lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == call_id,
            since=self._tool_marks.get(call_id, 0),
            timeout=timeout,
        )
        return msgspec.convert(record["result"]["details"], AskResult)

    def client(self, **options: Unpack[RelayOptions]) -> BridgeClient:
        """A ``BridgeClient`` over a ``RelayTransport`` to this Pi, not yet opened:
        ``async with pi.client() as client: ...``."""
        from pi_ask_sdk.transports.relay import RelayTransport

        return BridgeClient(RelayTransport(self.socket_path, **options))

    # --- the socket ---

    mode: Literal["rpc", "tui"] = "rpc"
    """Pi's run mode here: headless (``--mode rpc``), where the host opens a form only for an
    external-UI provider (the relay, while an answering bridge is connected)."""

    def relay_clients(self, *, timeout: float = WAIT) -> tuple[int, int]:
        """``(answering, observing)``: the clients connected to the relay now, from the hello
        of a short connection of our own (which says nothing, so counts as nobody's)."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(str(self.socket_path))
                buffer = b""
                while b"\n" not in buffer:
                    chunk = sock.recv(65536)
                    if not chunk:
                        raise PiFailed("the relay closed the connection before its hello")
                    buffer += chunk
        except OSError as error:
            raise PiFailed(f"cannot reach the relay at {self.socket_path}: {error}") from None
        hello = json.loads(buffer.split(b"\n", 1)[0])
        return int(hello.get("answering", 0)), int(hello.get("observing", 0))

    @contextmanager
    def answering(self, *, timeout: float = WAIT) -> Iterator[None]:
        """Hold a connection to the relay that says it answers forms while the block runs: a
        form the model opens meanwhile (``call_ask_user``) opens and waits for a bridge, which
        may connect later (``pi.client()``, a bridge process), instead of ending at once with
        the non-interactive result. What it receives is read and dropped."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            reader = self._say_answerer(sock, timeout)
        except (OSError, ValueError) as error:
            sock.close()
            raise PiFailed(f"cannot hold an answering connection to the relay: {error}") from None
        except BaseException:
            sock.close()
            raise
        drain = threading.Thread(target=reader.read, daemon=True)  # what arrives, until EOF
        drain.start()
        try:
            yield
        finally:
            # shutdown: the relay sees the end now, and the drain reads EOF (the socket's fd
            # stays open while its reader does)
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            drain.join(timeout)
            reader.close()
            sock.close()

    def _say_answerer(self, sock: socket.socket, timeout: float) -> BinaryIO:
        """Connect ``sock`` to the relay as an answerer; returns its reader once welcomed."""
        sock.settimeout(timeout)
        sock.connect(str(self.socket_path))
        reader = sock.makefile("rb")
        try:
            hello = json.loads(reader.readline())
            if int(hello.get("clientHello", 0)) < 1:
                raise ValueError("this relay has no client hello: it never serves headless forms")
            sock.sendall(b'{"type":"hello","version":1,"role":"answerer"}\n')
            while True:  # the replays come before the welcome
                line = reader.readline()
                if not line:
                    raise ValueError("the relay closed the connection before its welcome")
                if json.loads(line).get("type") == "welcome":
                    break
        except BaseException:
            reader.close()
            raise
        sock.settimeout(None)
        return reader

    def wait_answerer(self, *, timeout: float | None = WAIT, poll: float = 0.1) -> None:
        """Wait until a bridge that answers forms is connected to the relay (``timeout=None``:
        while Pi lives); ``PiFailed`` at the deadline or when Pi exits. A poll: the relay
        announces no change of its clients."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if self.relay_clients()[0] >= 1:
                    return
            except PiFailed:
                # the relay went away: Pi is exiting (give it a moment to be reaped), or not
                if not self.exited.wait(1.0):
                    raise
            if not self.alive():
                raise PiFailed(f"Pi exited; stderr:\n{self.stderr_tail()}")
            if deadline is not None and time.monotonic() > deadline:
                raise PiFailed(f"no answering bridge connected to the relay in {timeout:g} s")
            time.sleep(poll)

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
