"""FlowHost: opens, resolves, completes and disposes flows on a bus like the extension (§3-§5)."""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Literal

import msgspec
from msgspec import UNSET, structs

from ._clean import ENCODER, clean_copy, clean_text, is_plain, valid_struct
from .answers import (
    AcceptedAnswer,
    AcceptedResponse,
    AnswerProblem,
    FormIndex,
    check_answer_response,
    check_envelope,
)
from .bus import EventBus
from .errors import HostClosed, InvalidForm, SubmitRefused
from .forms import Form, parse_form_indexed
from .protocol import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    AskQuestion,
    AskResult,
    CompletedEvent,
    FlowSource,
    Issue,
    ResultMode,
    StartedEvent,
    SubmitAck,
    SubmitRejection,
    SubmitResultEvent,
)
from .results import build_result

__all__ = ["Clock", "FlowHandle", "FlowHost", "FlowState", "Scheduler"]

Scheduler = Callable[[Callable[[], None]], object]
"""Runs a callback later, e.g. ``loop.call_soon`` as the reference defers ``started``."""
Clock = Callable[[], int]
"""Milliseconds since the Unix epoch."""
FlowState = Literal["open", "completed", "disposed"]
"""A flow's state: open, completed (``completed`` emitted) or disposed (ended without it)."""

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_TOO_DEEP = "The value is nested more deeply than Python's recursion limit allows."


def _epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def _random_flow_id(now_ms: int) -> str:
    # Like JavaScript's Math.random().toString(36).slice(2): about eleven base-36 digits.
    # (os.urandom: eight random bytes are all it needs, without importing the random module.)
    number = int.from_bytes(os.urandom(8), "big")
    digits = []
    for _ in range(11):
        number, digit = divmod(number, 36)
        digits.append(_BASE36[digit])
    return f"flow:{now_ms}:{''.join(digits)}"


class FlowHandle:
    """One flow opened by ``FlowHost.start``.

    The host's own user can answer it (``complete``), edit local answers without completing
    (``set_local_answers``, what a cancel then reports), cancel it, or the host can dispose it
    (the UI went away, or the session ended: no ``completed`` is emitted).
    """

    __slots__ = (
        "__weakref__",
        "_created_at",
        "_done_callbacks",
        "_form_verified",
        "_host",
        "_index",
        "_local",
        "_local_verified",
        "_outcome",
        "_serial",
        "_state",
        "flow_id",
        "form",
        "source",
        "tool_call_id",
    )

    def __init__(
        self,
        host: FlowHost,
        flow_id: str,
        form: Form,
        tool_call_id: str | None,
        source: FlowSource,
        *,
        serial: int = 0,
        form_verified: bool = True,
        index: FormIndex | None = None,
    ) -> None:
        self._host = host
        self._serial = serial  # registration order, for close()
        self._form_verified = form_verified  # whether the input was checked JSON (see _finish)
        self.flow_id = flow_id
        self.form = form
        self.tool_call_id = tool_call_id
        self.source: FlowSource = source
        self._index = FormIndex(form.questions) if index is None else index
        self._local: dict[str, AcceptedAnswer] = {}
        self._state: FlowState = "open"
        self._created_at: int | None = None
        self._local_verified = True  # whether the local answers are known to encode as JSON
        # What the result is built from once completed (immutable answers, mode, cancelled):
        # ``result`` builds a fresh copy from it, so callers and listeners never share one.
        self._outcome: tuple[Mapping[str, AcceptedAnswer], ResultMode, bool] | None = None
        self._done_callbacks: list[Callable[[FlowHandle], None]] = []

    @property
    def title(self) -> str | None:
        """The form's title, or ``None``."""
        return None if self.form.title is UNSET else self.form.title

    @property
    def questions(self) -> tuple[AskQuestion, ...]:
        """The form's questions, normalized as the ``started`` event carries them."""
        return self.form.questions

    @property
    def state(self) -> FlowState:
        """``"open"``, ``"completed"`` or ``"disposed"``."""
        return self._state

    @property
    def is_open(self) -> bool:
        """Whether the flow is still open."""
        return self._state == "open"

    @property
    def created_at(self) -> int | None:
        """Epoch ms of the ``started`` event; None while it has not been emitted (or never was)."""
        return self._created_at

    @property
    def announced(self) -> bool:
        """Whether ``started`` was emitted for this flow."""
        return self._created_at is not None

    def started_event(self) -> StartedEvent | None:
        """The ``started`` payload as emitted (fresh lists), to replay it to a late listener."""
        if self._created_at is None:
            return None
        return self._host._started_payload(self, self._created_at)

    @property
    def result(self) -> AskResult | None:
        """The result the tool returns, once the flow completed (a fresh copy on each access)."""
        if self._outcome is None:
            return None
        answers, mode, cancelled = self._outcome
        return build_result(self.form, answers, mode=mode, cancelled=cancelled)

    def abort_result(self) -> AskResult:
        """What the tool call returns when it is aborted (or its form goes away) now: the flow
        cancelled, reporting the local answers, as a local cancel would (spec §3.5, A16; the
        result ``abort()`` completes with). A fresh copy on each call; it changes nothing."""
        return build_result(self.form, self._local, cancelled=True)

    @property
    def tool_result(self) -> AskResult | None:
        """What the tool call returns once the flow ended: its ``result`` if it completed, else
        (disposed: aborted, its UI or session gone) ``abort_result()``. None while open."""
        if self._state == "open":
            return None
        return self.result if self._outcome is not None else self.abort_result()

    def add_done_callback(self, callback: Callable[[FlowHandle], None]) -> None:
        """Call ``callback(handle)`` once the flow completes or is disposed (now, if it has)."""
        if self._state == "open":
            self._done_callbacks.append(callback)
        else:
            callback(self)

    def complete(self, response: object) -> AskResult:
        """Answer or cancel locally, as the host's own UI does; emits ``completed``.

        ``response`` is a ``RemoteAskResponse`` (dict or Struct) checked by the same rules as a
        remote submit. Raises ``SubmitRefused`` (the flow stays open) when it is invalid or the
        flow is no longer open.

        Args:
            response: ``{"kind": "answer", ...}`` or ``{"kind": "cancel"}``, or its Struct.

        Returns:
            The result the tool call returns.

        Raises:
            SubmitRefused: The response is invalid (``error`` is the submit error code the host
                would send), or the flow is not open (``flow_not_found``).
        """
        raw = msgspec.to_builtins(response) if isinstance(response, msgspec.Struct) else response
        if self._state != "open":
            raise SubmitRefused("flow_not_found", f'Flow "{self.flow_id}" is {self._state}.')
        if not isinstance(raw, Mapping) or raw.get("kind") not in ("answer", "cancel"):
            raise SubmitRefused(
                "invalid_request",
                'A response must be an object whose kind is "answer" or "cancel".',
            )
        if raw.get("kind") == "cancel":
            return self.cancel()
        decision = self._checked(raw)
        return self._finish(*valid_struct(decision))

    def answer(self, answers: object, *, mode: ResultMode = "submit") -> AskResult:
        """``complete`` with an answer response: ``answers`` maps question ids to answers.

        Args:
            answers: The ``answers`` object of a submit's response.
            mode: ``"submit"`` or ``"elaborate"``.

        Raises:
            SubmitRefused: As for ``complete``.
        """
        return self.complete({"kind": "answer", "mode": mode, "answers": answers})

    def cancel(self) -> AskResult:
        """Cancel locally (the user pressed Escape); emits ``completed`` with ``cancelled``.

        Raises:
            SubmitRefused: The flow is not open (``flow_not_found``).
        """
        if self._state != "open":
            raise SubmitRefused("flow_not_found", f'Flow "{self.flow_id}" is {self._state}.')
        return self._finish(None)

    def set_local_answers(self, answers: object) -> None:
        """Replace the answers typed in the host's own UI (not a completion).

        ``answers`` is an ``answers`` object as in a submit. They are what a cancel reports
        (spec §4.3, example L6).

        Raises:
            SubmitRefused: ``answers`` breaks a rule (``invalid_answer``).
        """
        decision, verified = valid_struct(self._checked({"kind": "answer", "answers": answers}))
        self._local = dict(decision.answers)
        self._local_verified = verified

    def _checked(self, response: Mapping[str, object]) -> AcceptedResponse:
        """The rules' verdict on an answer response given here (not by a submit)."""
        try:
            decision = check_answer_response(response, self._index)
        except RecursionError:
            raise SubmitRefused("invalid_answer", _TOO_DEEP) from None
        if type(decision) is AnswerProblem:
            raise SubmitRefused("invalid_answer", decision.message)
        return decision

    def abort(self) -> AskResult:
        """Pi aborted the operation while the form is open: the flow completes as cancelled,
        reporting the local answers, and ``completed`` is emitted. That is what the real
        extension does in its TUI and in the external-UI path alike (measured; the spec's A17
        said a TUI abort disposes). On a flow that already ended it changes nothing and returns
        ``abort_result()``."""
        if self._state != "open":
            return self.abort_result()
        return self.cancel()

    def dispose(self) -> None:
        """End the flow without ``completed`` (UI closed or failed, session ended)."""
        if self._state != "open":
            return
        self._state = "disposed"
        self._host._forget(self)
        self._run_callbacks()

    def _finish(self, accepted: AcceptedResponse | None, verified: bool = True) -> AskResult:
        """Complete once: leave the active set first, then emit ``completed`` (spec §3.4).

        ``accepted`` is the answer (``None``: a cancel, reporting the local answers), and
        ``verified`` whether it was read from input proven to encode as JSON. The result is
        built (and, unless everything it is built from was proven so, encoded) before any state
        changes: if that fails, the flow is still open and the caller can refuse the submit.
        """
        if accepted is None:
            outcome: tuple[Mapping[str, AcceptedAnswer], ResultMode, bool] = (
                self._local,
                "submit",
                True,
            )
            verified = self._local_verified
        else:
            outcome = (accepted.answers, accepted.mode, False)
        result = build_result(self.form, outcome[0], mode=outcome[1], cancelled=outcome[2])
        if not (verified and self._form_verified):
            ENCODER.encode(result)
        self._state = "completed"
        self._outcome = outcome
        self._host._forget(self)
        self._host._emit_completed(self, result)
        if self._done_callbacks:
            self._run_callbacks()
        return result

    def _run_callbacks(self) -> None:
        callbacks, self._done_callbacks = self._done_callbacks, []
        for callback in callbacks:
            callback(self)

    def _announce(self) -> None:
        # The §3.3 guard: a flow that completed or was disposed before this ran stays silent.
        if self._state == "open":
            self._host._emit_started(self)

    def __repr__(self) -> str:
        return f"<FlowHandle {self.flow_id!r} {self._state}>"


class FlowHost:
    """A headless ``pi-agent-ask`` host on an event bus.

    It answers every ``pi-agent-ask:submit`` on ``bus`` with exactly one ``submit-result``
    (checks in spec order, ``completed`` before the ``submit-result`` it caused) until
    ``close()``, after which submits get no answer at all, as after Pi's session shutdown.

    ``schedule`` defers the ``started`` event as the reference does (pass ``loop.call_soon``);
    without it ``start`` emits ``started`` before it returns. ``cwd`` is where relative
    ``previewFile`` paths are read from. ``clock`` returns epoch milliseconds.

    Flow lifetime: an open flow is kept (in ``active_flows``, reachable by its flow id) until it
    completes, is disposed or the host is closed; nothing times it out, as in the reference.
    A flow whose id a later flow took over (spec §3.6, example L5) stays open but is reachable
    only through its handle: the host holds it weakly, so it lives as long as the caller keeps
    the handle, and ``close()`` disposes it if it is still alive.

    Args:
        bus: The event bus to listen and emit on (``LocalEventBus``, or Pi's ``pi.events``).
        present_single_as_multi: Present single-choice questions as multi (the host option
            that makes ``type`` and ``requestedType`` differ).
        cwd: Where relative ``previewFile`` paths are read from.
        schedule: Defers the ``started`` event (``loop.call_soon``); ``None`` emits it in
            ``start``.
        clock: Epoch milliseconds, for ``createdAt`` and ``completedAt``.
    """

    def __init__(
        self,
        bus: EventBus,
        *,
        present_single_as_multi: bool = False,
        cwd: str | os.PathLike[str] | None = None,
        schedule: Scheduler | None = None,
        clock: Clock = _epoch_ms,
    ) -> None:
        self._bus = bus
        self._present_single_as_multi = present_single_as_multi
        self._cwd = cwd
        self._schedule = schedule
        self._clock = clock
        self._active: dict[str, FlowHandle] = {}
        # Open flows that left the active set without ending: replaced under their id by a later
        # flow, or whose entry an earlier flow's end removed (spec §3.6, example L5). Only their
        # handles reach them, so they are held weakly (by id): one lives as long as its caller
        # keeps the handle, and close() disposes those still alive.
        self._detached: dict[int, weakref.ref[FlowHandle]] = {}
        self._serial = 0
        self._unsubscribe: Callable[[], None] | None = bus.on(SUBMIT, self.handle_submit)

    @property
    def bus(self) -> EventBus:
        """The bus the host listens and emits on."""
        return self._bus

    @property
    def is_closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._unsubscribe is None

    @property
    def active_flows(self) -> tuple[FlowHandle, ...]:
        """Open flows in the order they were registered."""
        return tuple(self._active.values())

    def get(self, flow_id: str) -> FlowHandle | None:
        """The open flow with id ``flow_id``, or ``None``. An id that is not valid UTF-8 text
        is looked up as its cleaned copy, as ``start`` made it (and as a submit's is)."""
        handle = self._active.get(flow_id)
        if handle is None and isinstance(flow_id, str) and not is_plain(flow_id):
            handle = self._active.get(clean_text(flow_id))
        return handle

    def start(
        self, params: object, *, tool_call_id: str | None = None, source: FlowSource = "tool"
    ) -> FlowHandle:
        """Validate ask_user input and open a flow; raises ``InvalidForm`` (nothing emitted).

        The flow is registered before ``started`` is emitted, so a submit made from inside a
        ``started`` handler is processed.

        Ids are text like the rest of what the host emits: a ``tool_call_id`` that is not valid
        UTF-8 text (it holds a lone UTF-16 surrogate, legal in a JavaScript string, or is a
        ``str`` subclass) is taken as its cleaned copy, lone surrogates as U+FFFD, so the flow
        id is ``tool:<cleaned id>`` and ``started`` always encodes as JSON. That is the id a
        bridge sees of the real extension's flow too, since the relay decodes Pi's ``"\\ud800"``
        escapes the same way; a submit or ``get`` naming the id as given (uncleaned) still
        finds the flow.

        Args:
            params: The ``ask_user`` input: a dict as decoded from JSON, or an ``AskParams``.
            tool_call_id: The tool call's id; the flow id is then ``tool:<id>`` (else random),
                ``<id>`` cleaned as said above.
            source: ``"tool"``, or ``"ask:resume"`` for a form reopened to resume.

        Raises:
            InvalidForm: The input breaks the ``ask_user`` rules (``issues`` lists each).
            HostClosed: The host was closed.
        """
        if self._unsubscribe is None:
            raise HostClosed("this FlowHost was closed (session shutdown); open a new one")
        try:
            params, verified = clean_copy(params)
            form, index = parse_form_indexed(
                params, present_single_as_multi=self._present_single_as_multi, cwd=self._cwd
            )
        except RecursionError:
            raise InvalidForm("schema_error", (Issue(path="$", message=_TOO_DEEP),), None) from None
        if tool_call_id and not is_plain(tool_call_id):
            # Emitted in started/completed and a subject token in the fleet: valid text only.
            tool_call_id = clean_text(tool_call_id)
        flow_id = f"tool:{tool_call_id}" if tool_call_id else _random_flow_id(self._clock())
        self._serial += 1
        handle = FlowHandle(
            self,
            flow_id,
            form,
            tool_call_id or None,
            source,
            serial=self._serial,
            form_verified=verified,
            index=index,
        )
        # A later flow with the same id replaces the earlier one in the active set (spec §3.6).
        replaced = self._active.pop(flow_id, None)
        if replaced is not None:
            self._detach(replaced)
        self._active[flow_id] = handle
        if self._schedule is None:
            self._emit_started(handle)  # (the flow was just opened: _announce's guard holds)
        else:
            self._schedule(handle._announce)
        return handle

    def close(self) -> None:
        """Session shutdown: dispose every flow (no ``completed``) and stop answering submits."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        detached = (ref() for ref in list(self._detached.values()))
        flows = [*self._active.values(), *(handle for handle in detached if handle is not None)]
        for handle in sorted(flows, key=lambda handle: handle._serial):
            handle.dispose()

    def handle_submit(self, data: object) -> None:
        """The submit-channel handler: decide, apply, and emit the acknowledgement.

        Args:
            data: The ``submit`` payload as emitted: decoded JSON, or a ``SubmitEvent``.
        """
        self._bus.emit(SUBMIT_RESULT, self.resolve_submit(data))

    def resolve_submit(self, data: object) -> SubmitResultEvent:
        """Apply one submit and return its acknowledgement (``completed`` is emitted here).

        Never raises. The submit is judged once, as it is given; where a rule compares its text
        with the form's (the flow id, a question id, an option value) a text that is not valid
        UTF-8 text is compared as its cleaned copy, and what is emitted is valid text: lone
        surrogates become U+FFFD and a surrogate pair the character it encodes, as the relay
        decodes Pi's ``"\\ud83d"`` escapes, and a ``str`` subclass becomes a plain ``str``. Only
        what the rules read matters: a value nested too deeply in a key the rules ignore is
        ignored, as the reference ignores it, and one where they read it is refused for its
        type. A flow whose result cannot be built stays open and the submit is refused.

        Args:
            data: The ``submit`` payload as emitted: decoded JSON, or a ``SubmitEvent``.
        """
        if not isinstance(data, dict) and isinstance(data, msgspec.Struct):
            try:
                data = msgspec.to_builtins(data)
            except (TypeError, ValueError, RecursionError):
                data = None
        try:
            checked = check_envelope(data)  # parse_envelope's checks, as the host takes them
            if not isinstance(checked, tuple):  # its own refusal
                return _emitted(checked)
            rid, fid, kind, response = checked
            handle = self._active.get(fid)
            if handle is None and not is_plain(fid):
                fid = clean_text(fid)  # looked up as valid text, as flow ids are
                handle = self._active.get(fid)
            if handle is None:
                message = (
                    f'No ask flow "{fid}" is active: it never started, already completed, or '
                    "was closed."
                )
                return _emitted(
                    SubmitRejection(
                        request_id=rid, flow_id=fid, error="flow_not_found", message=message
                    )
                )
            if kind == "cancel":
                return self._accept(rid, handle, None)
            decision = check_answer_response(response, handle._index)
            if type(decision) is not AnswerProblem:
                return self._accept(rid, handle, decision)
            rejection = SubmitRejection(
                request_id=rid, flow_id=fid, error="invalid_answer", message=decision.message
            )
        except RecursionError:
            return _too_deep(data)
        return _emitted(rejection)

    def _accept(
        self, rid: str, handle: FlowHandle, decision: AcceptedResponse | None
    ) -> SubmitResultEvent:
        """``resolve_submit``'s verdict on a submit its rules accept (``decision``; ``None``: a
        cancel), applied, its texts cleaned where they are not valid."""
        if not is_plain(rid):
            rid = clean_text(rid)
        try:
            if decision is None:
                handle._finish(None)
            else:
                handle._finish(*valid_struct(decision))
        except (TypeError, ValueError, OverflowError) as exc:  # cannot encode
            message = clean_text(f"The answer cannot be recorded: {exc}.")
            return SubmitRejection(
                request_id=rid, flow_id=handle.flow_id, error="invalid_answer", message=message
            )
        # The active flow's own id: the submitted one is equal, but may be a str subclass.
        return SubmitAck(request_id=rid, flow_id=handle.flow_id)

    # --- called by handles ---

    def _forget(self, handle: FlowHandle) -> None:
        # Removes the entry for this id whichever flow holds it (reference behaviour, spec L5).
        current = self._active.pop(handle.flow_id, None)
        if current is not None and current is not handle:
            self._detach(current)
        if self._detached:
            self._detached.pop(id(handle), None)

    def _detach(self, handle: FlowHandle) -> None:
        key = id(handle)
        detached = self._detached

        def collected(_: object) -> None:
            # The handle died while open and unreachable: nothing can end it any more.
            detached.pop(key, None)

        detached[key] = weakref.ref(handle, collected)

    def _emit_started(self, handle: FlowHandle) -> None:
        handle._created_at = self._clock()
        self._bus.emit(STARTED, self._started_payload(handle, handle._created_at))

    def _started_payload(self, handle: FlowHandle, created_at: int) -> StartedEvent:
        # Each started event gets its own lists: a listener cannot change the host's form.
        questions = [structs.replace(q, options=list(q.options)) for q in handle.form.questions]
        return StartedEvent(
            flow_id=handle.flow_id,
            tool_call_id=handle.tool_call_id if handle.tool_call_id is not None else UNSET,
            source=handle.source,
            title=handle.form.title,
            questions=questions,
            created_at=created_at,
        )

    def _emit_completed(self, handle: FlowHandle, result: AskResult) -> None:
        event = CompletedEvent(
            flow_id=handle.flow_id,
            tool_call_id=handle.tool_call_id if handle.tool_call_id is not None else UNSET,
            source=handle.source,
            result=result,
            completed_at=self._clock(),
        )
        self._bus.emit(COMPLETED, event)


def _too_deep(data: object) -> SubmitRejection:
    """``invalid_request`` for a submit nested too deeply, echoing its ids when it has them."""
    rid = fid = ""
    if isinstance(data, Mapping):
        request_id, flow_id = data.get("requestId"), data.get("flowId")
        rid = clean_text(request_id) if isinstance(request_id, str) else ""
        fid = clean_text(flow_id) if isinstance(flow_id, str) else ""
    return SubmitRejection(
        request_id=rid,
        flow_id=fid,
        error="invalid_request",
        message="Submit is nested more deeply than this host accepts.",
    )


def _emitted(rejection: SubmitRejection) -> SubmitRejection:
    """``rejection`` as it is emitted: its texts cleaned where they are not valid text (its ids
    are the submit's own, and its message may quote submitted text)."""
    rid, fid, message = rejection.request_id, rejection.flow_id, rejection.message
    if (
        type(rid) is str
        and type(fid) is str
        and rid.isascii()
        and fid.isascii()
        and message.isascii()
    ):
        return rejection  # (ASCII text is valid; is_plain tells the rest)
    if is_plain(rid) and is_plain(fid) and is_plain(message):
        return rejection
    rid, fid, message = (clean_text(str(text)) for text in (rid, fid, message))
    return SubmitRejection(request_id=rid, flow_id=fid, error=rejection.error, message=message)
