"""The stand-in host: ``pi_ask_core.FlowHost`` answering a real Pi's forms through a thin extension.

The real host of Pi's ask forms is the ``pi-agent-ask`` extension (a Pi package). To try or test
a bridge without it, load the shipped extension ``pi-ask-standin.ts`` (its path:
``pi-ask standin-path``) into Pi and run a ``StandinServer`` here. The extension registers the
``ask_user`` tool, the ``/pi-ask-test-*`` commands and a scripted faux model, and forwards every
decision to the server, whose ``FlowHost`` is the one rules engine of this project: form
validation, the ``started`` payload, submit checks and results all come from ``pi_ask_core``.

Trust rules, as for the relay: the server listens on a Unix socket (mode 0600) in a directory
owned by this uid with mode 0700, refuses peers of another uid, and the extension does nothing
unless ``PI_ASK_STANDIN_SOCKET`` names that socket (and checks the same rules before connecting).

Link protocol (JSON lines, split on ``\\n`` only), one connection per Pi session::

    extension -> server   {"type":"hello","pid":N,"cwd":"..."}
                          {"type":"submit","data":...}          every emit on pi-agent-ask:submit
                          {"type":"command","ref":R,"name":"open|cancel|dispose|list","args":"..."}
                          {"type":"tool","ref":R,"toolCallId":"...","params":{...}}
                          {"type":"abort","ref":R}              the tool call was aborted
    server -> extension   {"type":"emit","channel":C,"data":...}   emitted on pi.events
                          {"type":"report","ref":R,"report":{...}} the command's report (notified)
                          {"type":"opened","ref":R,"flowId":"...","cancelled":{AskResult}}
                          {"type":"result","ref":R,"text":"...","result":{...}}  the tool's result
                          {"type":"error","ref":R,"message":"..."}  the tool fails (malformed input)

When the connection ends (session shutdown, Pi exits) the session's ``FlowHost`` is closed: its
flows are disposed without ``completed``, as in Pi.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Final

import msgspec

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT_RESULT,
    CompletedEvent,
    FlowHandle,
    FlowHost,
    FlowSource,
    InvalidForm,
    LocalEventBus,
    PiAskError,
    SubmitRefused,
    decode_event,
)
from pi_ask_core.results import build_result

__all__ = [
    "ENV_SOCKET",
    "StandinServer",
    "StandinSession",
    "StandinThread",
    "running_standin",
    "standin_extension_path",
]

ENV_SOCKET: Final = "PI_ASK_STANDIN_SOCKET"
"""The variable that names the server's socket to the extension (unset: the extension is off)."""

_LINE_LIMIT: Final = 256 * 1024 * 1024
_log = logging.getLogger("pi_ask_sdk.standin")


def standin_extension_path() -> Path:
    """The absolute path of the shipped stand-in extension: ``pi -e <path>``."""
    return Path(__file__).resolve().with_name("pi-ask-standin.ts")


def _encode(message: Mapping[str, object]) -> bytes:
    try:
        return msgspec.json.encode(message) + b"\n"
    except (UnicodeEncodeError, msgspec.EncodeError, TypeError):
        # Lone surrogates (legal in a JS string) cannot be UTF-8: escape them as JSON does.
        builtins = msgspec.to_builtins(message)
        return json.dumps(builtins, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


def _decode(line: bytes) -> object:
    # The extension cuts nesting deeper than 64 levels, so a line never exhausts the recursion
    # limit here.
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        return json.loads(line)  # accepts lone-surrogate escapes, which msgspec refuses


class _BadArguments(ValueError):
    pass


class StandinSession:
    """One Pi session on the link: its own bus and ``FlowHost`` (``host``)."""

    def __init__(self, server: StandinServer, writer: asyncio.StreamWriter) -> None:
        self._server = server
        self._writer = writer
        self.pid: int | None = None
        self.bus = LocalEventBus()
        self.host: FlowHost | None = None
        self._tools: dict[int, FlowHandle] = {}
        for channel in (STARTED, COMPLETED, SUBMIT_RESULT):
            self.bus.on(channel, self._forwarder(channel))

    def _forwarder(self, channel: str) -> Callable[[object], None]:
        def forward(data: object) -> None:
            self._send({"type": "emit", "channel": channel, "data": data})
            event = decode_event(channel, data)
            if isinstance(event, CompletedEvent):
                self._server._record(event)

        return forward

    def _send(self, message: Mapping[str, object]) -> None:
        if not self._writer.is_closing():
            self._writer.write(_encode(message))

    # --- messages from the extension ---

    def handle(self, message: object) -> None:
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "hello":
            self._hello(message)
            return
        host = self.host
        if host is None:
            _log.warning("stand-in link: %s before hello; ignored", kind)
            return
        ref = message.get("ref")
        if kind == "submit":
            host.handle_submit(message.get("data"))
        elif kind == "command" and isinstance(ref, int):
            name, args = message.get("name"), message.get("args")
            report = self._command(host, str(name), args if isinstance(args, str) else "")
            # FlowHost defers `started` with call_soon (as the extension does); report after it,
            # so a form is on pi.events (and in the relay's replay set) when its open returns.
            asyncio.get_running_loop().call_soon(
                self._send, {"type": "report", "ref": ref, "report": report}
            )
        elif kind == "tool" and isinstance(ref, int):
            self._tool(host, ref, message)
        elif kind == "abort" and isinstance(ref, int):
            handle = self._tools.get(ref)
            if handle is not None:
                handle.dispose()

    def _hello(self, message: Mapping[str, object]) -> None:
        if self.host is not None:
            return
        pid, cwd = message.get("pid"), message.get("cwd")
        self.pid = pid if isinstance(pid, int) else None
        self.host = FlowHost(
            self.bus,
            present_single_as_multi=self._server.present_single_as_multi,
            cwd=cwd if isinstance(cwd, str) else None,
            schedule=asyncio.get_running_loop().call_soon,
        )
        self._server._session_started(self)

    def _tool(self, host: FlowHost, ref: int, message: Mapping[str, object]) -> None:
        call_id = message.get("toolCallId")
        try:
            handle = host.start(
                message.get("params"),
                tool_call_id=call_id if isinstance(call_id, str) else None,
                source="tool",
            )
        except InvalidForm as error:
            if error.result is None:  # wrong JSON types: Pi's schema would refuse the call
                self._send({"type": "error", "ref": ref, "message": str(error)})
            else:
                self._send(
                    {"type": "result", "ref": ref, "text": str(error), "result": error.result}
                )
            return
        except PiAskError as error:
            self._send({"type": "error", "ref": ref, "message": str(error)})
            return
        cancelled = build_result(handle.form, {}, cancelled=True)
        self._tools[ref] = handle
        self._send({"type": "opened", "ref": ref, "flowId": handle.flow_id, "cancelled": cancelled})

        def done(finished: FlowHandle) -> None:
            self._tools.pop(ref, None)
            result = finished.result or cancelled  # disposed (aborted): a cancelled result
            text = msgspec.json.encode(result).decode()
            self._send({"type": "result", "ref": ref, "text": text, "result": result})

        handle.add_done_callback(done)

    def _command(self, host: FlowHost, name: str, args: str) -> dict[str, object]:
        if name == "open":
            return self._open(host, args)
        if name == "list":
            return {
                "command": "list",
                "ok": True,
                "flowIds": [h.flow_id for h in host.active_flows],
            }
        if name in ("local", "complete"):
            return self._local(host, name, args)
        flow_id = args.strip()
        handle = host.get(flow_id)
        if name == "cancel":
            if handle is not None:
                handle.cancel()
            return {"command": "cancel", "ok": handle is not None, "flowId": flow_id}
        if name == "dispose":
            if handle is not None:
                handle.dispose()
            return {"command": "dispose", "ok": handle is not None, "flowId": flow_id}
        return {
            "command": name,
            "ok": False,
            "error": "bad_arguments",
            "message": "unknown command",
        }

    def _local(self, host: FlowHost, name: str, args: str) -> dict[str, object]:
        """The host's own user: typed answers (``local``) or a completion (``complete``)."""
        try:
            spec = _decode(args.encode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError) as error:
            spec = None
            problem = f"not JSON: {error}"
        else:
            problem = 'expected a JSON object {"flowId", ...}'
        flow_id = spec.get("flowId") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or not isinstance(flow_id, str):
            return {"command": name, "ok": False, "error": "bad_arguments", "message": problem}
        handle = host.get(flow_id)
        try:
            if handle is None:
                raise SubmitRefused("flow_not_found", f'No open flow "{flow_id}".')
            if name == "local":
                handle.set_local_answers(spec.get("answers"))
                return {"command": name, "ok": True, "flowId": flow_id}
            result = handle.complete(spec.get("response"))
        except SubmitRefused as error:
            report = {"command": name, "ok": False, "flowId": flow_id, "error": error.code}
            return {**report, "message": error.message}
        return {"command": name, "ok": True, "flowId": flow_id, "result": result}

    def _open(self, host: FlowHost, args: str) -> dict[str, object]:
        try:
            spec = _open_spec(args, self._server.present_single_as_multi)
        except _BadArguments as error:
            return {"command": "open", "ok": False, "error": "bad_arguments", "message": str(error)}
        call_id = spec.get("toolCallId")
        source: FlowSource = "ask:resume" if spec.get("source") == "ask:resume" else "tool"
        try:
            handle = host.start(
                spec.get("params"),
                tool_call_id=call_id if isinstance(call_id, str) else None,
                source=source,
            )
        except InvalidForm as error:
            return {
                "command": "open",
                "ok": False,
                "error": error.kind,
                "issues": [{"path": i.path, "message": i.message} for i in error.issues],
                "message": str(error),
            }
        except PiAskError as error:
            return {"command": "open", "ok": False, "error": error.code, "message": str(error)}
        return {"command": "open", "ok": True, "flowId": handle.flow_id}

    def closed(self) -> None:
        if self.host is not None:
            self.host.close()


def _open_spec(args: str, present_single_as_multi: bool) -> Mapping[str, object]:
    try:
        spec = _decode(args.encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as error:
        raise _BadArguments(f"not JSON: {error}") from None
    if not isinstance(spec, dict):
        raise _BadArguments("expected a JSON object {toolCallId?, params, source?}")
    if "toolCallId" in spec and not isinstance(spec["toolCallId"], str):
        raise _BadArguments("toolCallId must be a string")
    if spec.get("source", "tool") not in ("tool", "ask:resume"):
        raise _BadArguments('source must be "tool" or "ask:resume"')
    if spec.get("presentSingleAsMulti", present_single_as_multi) is not present_single_as_multi:
        raise _BadArguments(
            "presentSingleAsMulti is a setting of the stand-in server "
            "(StandinServer(present_single_as_multi=...)), not of one form"
        )
    return spec


def _private_dir(path: Path) -> None:
    """The relay's rules for the socket's directory (``UnsafeRelayPath`` says what is wrong)."""
    from pi_ask_sdk.transports.relay import check_relay_dir

    check_relay_dir(path)


class StandinServer:
    """Listens for the stand-in extension; one ``StandinSession`` (and ``FlowHost``) per session.

    ``socket_path`` defaults to ``pi-ask-standin.sock`` in a fresh private directory. Use as an
    async context manager, or ``await start()`` / ``await close()``. ``environment()`` is what
    Pi's environment needs. Every ``completed`` event of every session is kept in ``completed``.
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        present_single_as_multi: bool = False,
    ) -> None:
        self._requested = Path(socket_path) if socket_path is not None else None
        self._own_dir: Path | None = None
        self.present_single_as_multi = present_single_as_multi
        self.sessions: list[StandinSession] = []
        self.completed: list[CompletedEvent] = []
        self._server: asyncio.AbstractServer | None = None
        self._path: Path | None = None
        self._cond = threading.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def path(self) -> Path:
        if self._path is None:
            raise RuntimeError("the stand-in server is not started")
        return self._path

    def environment(self) -> dict[str, str]:
        """The variable that turns the extension on: ``{"PI_ASK_STANDIN_SOCKET": path}``."""
        return {ENV_SOCKET: str(self.path)}

    async def start(self) -> StandinServer:
        if self._requested is None:
            base = os.environ.get("XDG_RUNTIME_DIR") or None
            self._own_dir = Path(tempfile.mkdtemp(prefix="pi-ask-standin-", dir=base))
            path = self._own_dir / "standin.sock"
        else:
            path = self._requested
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _private_dir(path.parent)
        with contextlib.suppress(FileNotFoundError):
            if path.is_socket():
                path.unlink()
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(path), limit=_LINE_LIMIT
        )
        path.chmod(0o600)
        self._path = path
        return self

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
        if self._own_dir is not None:
            with contextlib.suppress(OSError):
                self._own_dir.rmdir()

    async def __aenter__(self) -> StandinServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        session = StandinSession(self, writer)
        try:
            if not _same_user(writer):
                _log.warning("stand-in: refused a peer of another uid")
                return
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    return
                try:
                    message = _decode(line)
                except (ValueError, RecursionError):
                    _log.warning("stand-in link: undecodable line skipped")
                    continue
                try:
                    session.handle(message)
                except Exception:  # a bug here must not take the other forms down
                    _log.exception("stand-in: handling %.80r failed", line)
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            return
        finally:
            session.closed()
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    def _session_started(self, session: StandinSession) -> None:
        with self._cond:
            self.sessions.append(session)
            self._cond.notify_all()

    def _record(self, event: CompletedEvent) -> None:
        with self._cond:
            self.completed.append(event)
            self._cond.notify_all()

    def wait_completed(self, flow_id: str, *, timeout: float) -> CompletedEvent:
        """The ``completed`` event of ``flow_id`` (thread-safe; ``TimeoutError`` at the deadline).

        Call it from another thread than the server's loop (``StandinThread``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.completed:
                    if event.flow_id == flow_id:
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"flow {flow_id} did not complete in {timeout:g} s")
                self._cond.wait(left)


def _same_user(writer: asyncio.StreamWriter) -> bool:
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return True  # no peer credentials here: the 0600 socket in a 0700 directory guards it
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return True
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())


class StandinThread:
    """A ``StandinServer`` on an event loop of its own thread, for synchronous code and tests
    whose own loop may block. A context manager; ``server`` is the running server."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        present_single_as_multi: bool = False,
    ) -> None:
        self.server = StandinServer(socket_path, present_single_as_multi=present_single_as_multi)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="pi-ask-standin", daemon=True
        )

    def start(self) -> StandinThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(30)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> StandinThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def path(self) -> Path:
        return self.server.path

    def environment(self) -> dict[str, str]:
        return self.server.environment()


@contextlib.contextmanager
def running_standin(*, present_single_as_multi: bool = False) -> Iterator[StandinThread]:
    """``with running_standin() as standin: ...``: a ``StandinThread``, always stopped."""
    with StandinThread(present_single_as_multi=present_single_as_multi) as standin:
        yield standin
