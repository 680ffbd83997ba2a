"""Ask a person in a terminal: a started form in, an explicit ``Answer`` or ``Cancel`` out.

The terminal policy: an option is chosen by its number or by its exact value; both are turned
into the option's value by this code. Typing a label is refused with a hint (labels are for
reading, never sent). Free text is custom text only where the person says so (``+text``).
Cancelling is its own explicit command, never inferred from what was typed.

``pi-ask answer`` asks in a daemon thread (``input()`` blocks and cannot be interrupted), so
Ctrl-C stops the command at once, and end of input (Ctrl-D, a closed pipe) stops it cleanly:
neither is ever taken as an answer or a cancel, and forms not answered stay open in Pi. A form
that completes while the person is still typing (answered in Pi, or by another bridge) is not
asked any further.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import TextIO, TypeVar

import msgspec

from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.errors import BridgeError
from pi_ask_sdk.forms import FlowView, OptionValue, QuestionView
from pi_ask_sdk.outcomes import BridgeEvent
from pi_ask_sdk.responses import AnswerBuilder, Cancel, Response

from .render import render_flow, render_outcome, render_question
from .text import clean, echo

__all__ = [
    "CancelRequested",
    "FormGone",
    "answer_forms",
    "ask_person",
    "parse_choice",
    "prompt_stderr",
    "prompt_stdout",
]

Prompt = Callable[[str], str]
Write = Callable[[str], None]
Record = Callable[[dict[str, object]], None]
T = TypeVar("T")


class CancelRequested(Exception):
    """The person typed ``!cancel``."""


class FormGone(Exception):
    """The form completed (or its session ended) while the person was answering it."""


class _StdinLines:
    """Lines of file descriptor 0, read with ``os.read``.

    The prompting thread is a daemon that may still be blocked reading when the command ends
    (Ctrl-C); had it gone through ``sys.stdin``, it would hold that buffer's lock and the
    interpreter would abort at exit. A terminal in canonical mode still edits the line.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._lock = threading.Lock()

    def readline(self) -> str:
        with self._lock:
            while b"\n" not in self._buffer:
                try:
                    chunk = os.read(0, 65536)
                except OSError:  # no stdin at all (closed fd 0): nothing more will be typed
                    chunk = b""
                if not chunk:
                    if not self._buffer:
                        raise EOFError
                    line, self._buffer = self._buffer, b""
                    return line.decode("utf-8", "replace")
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            return line.decode("utf-8", "replace").removesuffix("\r")


_STDIN = _StdinLines()


def _prompt_on(stream: TextIO, text: str) -> str:
    stream.write(clean(text))
    stream.flush()
    return _STDIN.readline()


def prompt_stdout(text: str) -> str:
    """``input()`` for the prompting thread: the prompt on stdout, the line from fd 0."""
    return _prompt_on(sys.stdout, text)


def prompt_stderr(text: str) -> str:
    """The same with the prompt on stderr (stdout carries JSON lines with ``--json``)."""
    return _prompt_on(sys.stderr, text)


def parse_choice(question: QuestionView, text: str) -> tuple[list[OptionValue], str | None]:
    """Option values and custom text from what the person typed.

    Parts are separated by commas; a part is an option number, an exact option value, or
    ``+custom text``. Raises ``ValueError`` with a message for the person.
    """
    values: list[OptionValue] = []
    custom: str | None = None
    for raw_part in text.split(","):
        part = raw_part.strip()
        if not part:
            continue
        if part.startswith("+"):
            custom = part[1:].strip() or None
            continue
        if part.isdigit() and 1 <= int(part) <= len(question.options):
            values.append(question.options[int(part) - 1].value)
        elif question.has_value(part):
            values.append(question.value(part))
        else:
            labels = {o.label.casefold(): o for o in question.options}
            match = labels.get(part.casefold())
            if match is not None:
                raise ValueError(
                    f'"{part}" is a label; type its number ({match.position}) or its value '
                    f"({match.value})."
                )
            raise ValueError(f'"{part}" is neither an option number nor an option value.')
    return values, custom


def _ask_question(
    builder: AnswerBuilder, question: QuestionView, prompt: Prompt, write: Write, number: int
) -> None:
    write("\n".join(render_question(question, number)))
    how = "numbers or values, comma-separated" if question.multi else "a number or a value"
    qid = clean(question.id)
    while True:
        text = prompt(f"  {qid}> choose {how}; +text for custom text; Enter to skip: ")
        if text.strip() == "!cancel":
            raise CancelRequested
        try:
            values, custom = parse_choice(question, text)
            builder.select(question, *values)
            if custom is not None:
                builder.custom_text(question, custom)
        except (ValueError, BridgeError) as error:
            write(f"  ! {error}")
            continue
        break
    note = prompt(f"  {qid}> note (Enter for none): ")
    if note.strip():
        builder.note(question, note)


def ask_person(flow: FlowView, prompt: Prompt = input, write: Write = echo) -> Response:
    """Walk the person through ``flow`` and return what they chose, as values.

    ``!cancel`` at any prompt, or ``c`` at the end, returns an explicit ``Cancel``. End of input
    raises ``EOFError`` (never a cancel); ``FormGone`` from ``prompt`` passes through.
    """
    builder = AnswerBuilder(flow)
    try:
        for number, question in enumerate(flow.questions, start=1):
            _ask_question(builder, question, prompt, write, number)
        while True:
            final = prompt("Submit (s), ask the agent to clarify first (e), or cancel (c)? ")
            choice = final.strip().lower()
            if choice in ("s", "e", "c", "!cancel"):
                break
            write("  ! type s, e or c")
    except CancelRequested:
        return Cancel.of(flow)
    if choice in ("c", "!cancel"):
        return Cancel.of(flow)
    return builder.mode("elaborate" if choice == "e" else "submit").build()


def _in_daemon_thread(work: Callable[[], T]) -> asyncio.Future[T]:
    """Run ``work`` in a daemon thread: unlike ``asyncio.to_thread`` (whose pool is joined at
    exit), a thread blocked in ``input()`` cannot keep the process alive after Ctrl-C."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def hand_over(settle: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle)

    def run() -> None:
        try:
            result = work()
        except BaseException as error:  # handed to the awaiting side, whatever it is
            failure = error
            hand_over(lambda: None if future.done() else future.set_exception(failure))
        else:
            hand_over(lambda: None if future.done() else future.set_result(result))

    threading.Thread(target=run, name="pi-ask-prompt", daemon=True).start()
    return future


class _Watch:
    """Follows ``client.events()`` to learn when the form being asked stops being open."""

    def __init__(self, client: BridgeClient) -> None:
        self._client = client
        self.flow_id: str | None = None
        self.why = ""
        self.stop = threading.Event()  # the form is gone; read by the prompting thread
        self.wake = asyncio.Event()  # the form is gone, or the person finished

    def begin(self, flow: FlowView) -> None:
        self.flow_id, self.why = flow.flow_id, ""
        self.stop = threading.Event()
        self.wake = asyncio.Event()

    def see(self, event: BridgeEvent) -> None:
        if event.kind == "completed" and event.flow_id == self.flow_id:
            self._mark(f"was completed meanwhile (source {event.source})")
        elif event.kind == "session_ended" and self.flow_id not in self._client.open_flows:
            # (a late session_ended must not stop a form the reconnection has replayed)
            self._mark("is gone: the Pi session ended")

    def _mark(self, why: str) -> None:
        self.why = why
        self.stop.set()
        self.wake.set()

    def guard(self, prompt: Prompt) -> Prompt:
        stop = self.stop

        def guarded(text: str) -> str:
            if stop.is_set():
                raise FormGone
            line = prompt(text)
            if stop.is_set():  # what was typed belongs to a form that is gone
                raise FormGone
            return line

        return guarded


async def _ask(flow: FlowView, watch: _Watch, prompt: Prompt, write: Write) -> Response | None:
    """The person's response, or ``None`` when the form went away while they answered."""
    watch.begin(flow)
    asking = _in_daemon_thread(lambda: ask_person(flow, watch.guard(prompt), write))
    wake = watch.wake
    asking.add_done_callback(lambda _: wake.set())
    await wake.wait()
    told = not asking.done()
    if told:
        write(f"! {clean(flow.flow_id)} {watch.why}; not asking it any more (press Enter)")
    try:
        response = await asking  # a prompt already shown still waits for its line
    except FormGone:
        if not told:
            write(f"! {clean(flow.flow_id)} {watch.why}; not asking it any more")
        return None
    if watch.stop.is_set():
        write(f"! {clean(flow.flow_id)} {watch.why}; nothing sent")
        return None
    return response


async def answer_forms(
    client: BridgeClient,
    prompt: Prompt = prompt_stdout,
    write: Write = echo,
    *,
    limit: int | None = None,
    timeout: float = 30.0,
    record: Record | None = None,
) -> int:
    """``pi-ask answer``: ask the person for each form as it opens and submit their choice.

    A form the host refuses as ``invalid_answer`` is still open and is asked again; a form that
    completes before or while it is asked is skipped. ``record`` receives one dict per submit
    (``--json``). Returns how many forms were answered (accepted). ``limit`` stops after that
    many forms; end of input stops at once (nothing is sent for the form being asked).
    """
    handled = accepted = 0
    watch = _Watch(client)
    events = client.events()

    async def follow() -> None:
        async for event in events:
            watch.see(event)

    follower = asyncio.create_task(follow())
    try:
        async for flow in client.flows():
            if flow.flow_id not in client.open_flows:
                write(f"! {clean(flow.flow_id)} completed before it was asked; skipped")
                continue
            write(render_flow(flow))
            while True:
                try:
                    response = await _ask(flow, watch, prompt, write)
                except EOFError:
                    write("end of input: stopped; forms not answered stay open in Pi")
                    return accepted
                if response is None:
                    break
                try:
                    outcome = await client.respond(flow, response, timeout=timeout)
                except BridgeError as error:
                    write(f"! {error}")
                    _record(record, flow, response, "error", error.code, str(error))
                    break
                write(render_outcome(outcome))
                if outcome.kind == "accepted":
                    _record(record, flow, response, "accepted", None, None)
                    accepted += 1
                    break
                _record(record, flow, response, "rejected", outcome.error, outcome.message)
                if not outcome.flow_still_open:
                    break
                write("the form is still open; answer it again")
            handled += 1
            if limit is not None and handled >= limit:
                break
        else:
            write("the connection to Pi ended (Pi exited or its relay stopped)")
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        await events.aclose()
    return accepted


def _record(
    record: Record | None,
    flow: FlowView,
    response: Response,
    outcome: str,
    error: str | None,
    message: str | None,
) -> None:
    if record is None:
        return
    entry: dict[str, object] = {"flowId": flow.flow_id, "outcome": outcome}
    if error is not None:
        entry["error"] = error
        entry["message"] = message
    entry["response"] = msgspec.to_builtins(response.to_wire())
    record(entry)
