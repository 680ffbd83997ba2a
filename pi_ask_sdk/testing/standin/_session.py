"""``StandinSession``: one Pi session on the link, its own bus and ``FlowHost``, and the
``/pi-ask-test-*`` commands' reports."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

import msgspec

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT_RESULT,
    AskResult,
    CompletedEvent,
    FlowHandle,
    FlowHost,
    InvalidForm,
    LocalEventBus,
    PiAskError,
    SubmitRefused,
    decode_event,
)
from pi_ask_core.background import (
    ANSWER_MESSAGE,
    BackgroundAnswer,
    BackgroundQueue,
    answer_starts_turn,
    background_answer_text,
    queued_text,
)
from pi_ask_core.external_ui import (
    ask_route,
    external_ui_request,
    invalid_provider_response,
    non_interactive_result,
)
from pi_ask_core.forms import parse_form
from pi_ask_core.protocol import FlowSource

from ._link import decode_line, encode_line

__all__ = ["SessionOwner", "StandinSession"]

_log = logging.getLogger("pi_ask_sdk.testing.standin")


class SessionOwner(Protocol):
    """What a ``StandinSession`` needs from its server (``StandinServer`` is one): its setting,
    and to be told of the session's start and of each ``completed`` event."""

    @property
    def present_single_as_multi(self) -> bool:
        """The host option every session's ``FlowHost`` gets."""
        ...

    def session_started(self, session: StandinSession) -> None:
        """A Pi session said hello."""
        ...

    def session_completed(self, session: StandinSession, event: CompletedEvent) -> None:
        """A flow of ``session`` completed with ``event``."""
        ...


class _BadArguments(ValueError):
    pass


class StandinSession:
    """One Pi session on the link: its own bus and ``FlowHost`` (``host``).

    ``pid`` is the Pi process's, from its hello (a Pi keeps its pid across ``new_session``; its
    session, and so this object, is new)."""

    def __init__(self, owner: SessionOwner, writer: asyncio.StreamWriter) -> None:
        self._owner = owner
        self._writer = writer
        self.pid: int | None = None
        self.bus = LocalEventBus()
        self.host: FlowHost | None = None
        self._cwd: str | None = None
        self._tools: dict[int, FlowHandle] = {}
        # ask_user calls validated and waiting for the extension's negotiation: their params,
        # tool call id and non-interactive (cancelled) result
        self._negotiating: dict[int, tuple[object, str | None, AskResult]] = {}
        # the TUI's background forms (the params each opens with); the core decides the order
        self._queue: BackgroundQueue[object] = BackgroundQueue()
        for channel in (STARTED, COMPLETED, SUBMIT_RESULT):
            self.bus.on(channel, self._forwarder(channel))

    def _forwarder(self, channel: str) -> Callable[[object], None]:
        def forward(data: object) -> None:
            self._send({"type": "emit", "channel": channel, "data": data})
            event = decode_event(channel, data)
            if isinstance(event, CompletedEvent):
                self._owner.session_completed(self, event)

        return forward

    def _send(self, message: Mapping[str, object]) -> None:
        if not self._writer.is_closing():
            self._writer.write(encode_line(message))

    # --- messages from the extension ---

    def handle(self, message: object) -> None:
        """Act on one message of the extension (decoded JSON); a malformed one is ignored."""
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "ping":  # the extension's heartbeat while it waits on this server
            self._send({"type": "pong"})
            return
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
        elif kind == "provider" and isinstance(ref, int):
            self._provider(host, ref, message.get("connected") is True)
        elif kind in ("provided", "provider_failed") and isinstance(ref, int):
            self._provided(ref, message)
        elif kind == "abort" and isinstance(ref, int):
            self._abort(ref)
        elif kind == "failed" and isinstance(ref, int):
            self._abandon(ref)

    def _hello(self, message: Mapping[str, object]) -> None:
        if self.host is not None:
            return
        pid, cwd = message.get("pid"), message.get("cwd")
        self.pid = pid if isinstance(pid, int) else None
        self._cwd = cwd if isinstance(cwd, str) else None
        self.host = FlowHost(
            self.bus,
            present_single_as_multi=self._owner.present_single_as_multi,
            cwd=self._cwd,
            schedule=asyncio.get_running_loop().call_soon,
        )
        self._owner.session_started(self)

    def _tool(self, host: FlowHost, ref: int, message: Mapping[str, object]) -> None:
        """An ``ask_user`` call: validated first; then, in Pi's TUI, the form opens (a
        background call's is queued and the call returns its receipt); in any other mode the
        extension must first negotiate an external UI (a provider)."""
        call_id = message.get("toolCallId")
        tool_call_id = call_id if isinstance(call_id, str) else None
        params = message.get("params")
        try:
            form = parse_form(
                params,
                present_single_as_multi=self._owner.present_single_as_multi,
                cwd=self._cwd,
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
        route = ask_route(message.get("mode"), params)
        if route == "open":
            self._open_tool(host, ref, params, tool_call_id, provided=False)
            return
        if route == "queue":
            ids = [question.id for question in form.questions]
            receipt = self._queue.enqueue(tool_call_id or "", params, ids)
            text = queued_text(receipt)
            self._send({"type": "result", "ref": ref, "text": text, "result": receipt})
            self._open_next(host)
            return
        if route == "fallback":
            self._send_result(ref, non_interactive_result(form))
            return
        # Nothing is open yet: the extension emits the negotiation event and says whether a
        # provider connected ("provider"); with none, the non-interactive result (no events).
        self._negotiating[ref] = (params, tool_call_id, non_interactive_result(form))
        self._send({"type": "negotiate", "ref": ref})

    def _open_next(self, host: FlowHost) -> None:
        """Open the background form the core's queue says is next, if any. When it ends, its
        answer goes to the model as a message (the call returned long ago) and the next opens;
        a form that fails to open (its preview file went away, say) is reported the same way."""
        while not host.is_closed and (entry := self._queue.next()) is not None:
            request_id, params = entry
            try:
                handle = host.start(params, tool_call_id=request_id or None, source="tool")
            except PiAskError as error:
                self._queue.finished(request_id)
                self._deliver(BackgroundAnswer(request_id=request_id, error=str(error)))
                continue

            def done(finished: FlowHandle, request_id: str = request_id) -> None:
                self._queue.finished(request_id)
                result = finished.tool_result  # its own, or (disposed) the cancelled one
                assert result is not None  # (it ended)
                answer = BackgroundAnswer(request_id=request_id, result=result)

                def deliver_and_go_on() -> None:
                    if host.is_closed:  # the session ended: nothing is delivered, nothing opens
                        return
                    self._deliver(answer)
                    self._open_next(host)

                self._after_emit(deliver_and_go_on)

            handle.add_done_callback(done)
            return

    def _deliver(self, answer: BackgroundAnswer) -> None:
        """Have the extension bring a background form's answer to the model."""
        text = background_answer_text(answer)
        self._send(
            {
                "type": "answer",
                "customType": ANSWER_MESSAGE,
                "text": text,
                "details": answer,
                "triggerTurn": answer_starts_turn(answer),
            }
        )

    def _provider(self, host: FlowHost, ref: int, connected: bool) -> None:
        pending = self._negotiating.pop(ref, None)
        if pending is None:
            return  # aborted meanwhile: already answered
        params, tool_call_id, fallback = pending
        if not connected:
            self._send_result(ref, fallback)
            return
        self._open_tool(host, ref, params, tool_call_id, provided=True)

    def _open_tool(
        self,
        host: FlowHost,
        ref: int,
        params: object,
        tool_call_id: str | None,
        *,
        provided: bool,
    ) -> None:
        try:
            handle = host.start(params, tool_call_id=tool_call_id, source="tool")
        except PiAskError as error:  # (validated already: the host closed meanwhile)
            self._send({"type": "error", "ref": ref, "message": str(error)})
            return
        self._tools[ref] = handle
        self._opened(ref, handle, provided=provided)

        def done(finished: FlowHandle) -> None:
            if self._tools.pop(ref, None) is None:
                return  # failed: the tool error was sent
            result = finished.tool_result  # the core's: completed, or aborted (cancelled)
            assert result is not None  # (it ended)
            # A completed cancel ends the agent's turn, as the real host does (ctx.abort()).
            abort = finished.result is not None and result.cancelled
            self._after_emit(lambda: self._send_result(ref, result, abort=abort))

        handle.add_done_callback(done)

    @staticmethod
    def _after_emit(callback: Callable[[], None]) -> None:
        """Run ``callback`` once the host's current emit is over. A flow ends inside the submit
        that completes it, and the host emits that submit's ``submit-result`` after the
        ``completed``; the real host resumes the tool call only later (its promise settles on
        a later tick), so the agent's result, an abort of its turn and the next queued form
        never overtake a bridge's acknowledgement (a ``pi-ask try`` that stopped Pi on the
        tool result could cut the ``submit-result`` off)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (the server is gone): nothing is waiting for the order
            callback()
            return
        loop.call_soon(callback)

    def _opened(self, ref: int, handle: FlowHandle, *, provided: bool = False) -> None:
        """Tell the extension the form is open, with the result its call returns if it is
        aborted (or this server is lost): the core's, sent again when the local answers change.
        ``provided``: the form opened for an external-UI provider, whose ``open()`` the
        extension calls with the ``request`` sent here."""
        opened: dict[str, object] = {
            "type": "opened",
            "ref": ref,
            "flowId": handle.flow_id,
            "cancelled": handle.abort_result(),
        }
        if provided:
            opened["request"] = external_ui_request(handle)
        self._send(opened)

    def _send_result(self, ref: int, result: AskResult, *, abort: bool = False) -> None:
        text = msgspec.json.encode(result).decode()
        self._send({"type": "result", "ref": ref, "text": text, "result": result, "abort": abort})

    def _provided(self, ref: int, message: Mapping[str, object]) -> None:
        """The provider settled its ``open``: resolved with a response (judged like a submit;
        one the host refuses fails the call) or rejected (its UI failed: the call fails). Either
        way a failed call's flow is disposed without ``completed``."""
        handle = self._tools.get(ref)
        if handle is None or not handle.is_open:
            return  # the flow ended first: a late resolution is ignored
        if message.get("type") == "provider_failed":
            why = message.get("message")
            self._fail_tool(ref, handle, why if isinstance(why, str) else "the external UI failed")
            return
        try:
            handle.complete(message.get("response"))
        except SubmitRefused as error:
            self._fail_tool(ref, handle, invalid_provider_response(error.message))

    def _fail_tool(self, ref: int, handle: FlowHandle, message: str) -> None:
        self._tools.pop(ref, None)
        self._send({"type": "error", "ref": ref, "message": message})
        handle.dispose()

    def _abort(self, ref: int) -> None:
        pending = self._negotiating.pop(ref, None)
        if pending is not None:
            self._send_result(ref, pending[2])
            return
        # The call already ended (the extension answered it with the abort result it was
        # given); the flow completes as cancelled, as the real host's does.
        handle = self._tools.pop(ref, None)
        if handle is not None:
            handle.abort()

    def _abandon(self, ref: int) -> None:
        """The extension gave up on the call (this server did not answer in time; the model got
        a tool error): its form ends without ``completed``, like a host whose UI failed."""
        self._negotiating.pop(ref, None)
        handle = self._tools.pop(ref, None)
        if handle is not None:
            handle.dispose()

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
            spec = decode_line(args.encode("utf-8", "surrogatepass"))
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
                for ref, tool in self._tools.items():
                    if tool is handle:
                        self._opened(ref, handle)
                return {"command": name, "ok": True, "flowId": flow_id}
            result = handle.complete(spec.get("response"))
        except SubmitRefused as error:
            report = {"command": name, "ok": False, "flowId": flow_id, "error": error.code}
            return {**report, "message": error.message}
        return {"command": name, "ok": True, "flowId": flow_id, "result": result}

    def _open(self, host: FlowHost, args: str) -> dict[str, object]:
        try:
            spec = _open_spec(args, self._owner.present_single_as_multi)
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
        """The link ended: the session's flows are disposed without ``completed``, as in Pi."""
        if self.host is not None:
            self.host.close()
        self._queue.clear()


def _open_spec(args: str, present_single_as_multi: bool) -> Mapping[str, object]:
    try:
        spec = decode_line(args.encode("utf-8", "surrogatepass"))
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
