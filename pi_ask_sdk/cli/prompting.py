"""Prompting a person from a daemon thread, for ``pi-ask answer``.

``input()`` blocks and cannot be interrupted, so the console asks in a daemon thread and the
event loop keeps serving the connection. Ctrl-C then stops the command at once, end of input
stops it cleanly, and a form that completes while the person is typing is not asked further.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable
from typing import TextIO, TypeVar

from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.forms import FlowView
from pi_ask_sdk.outcomes import BridgeEvent

from .text import clean, echo, emit, json_line

__all__ = [
    "FormGone",
    "FormWatch",
    "PiGone",
    "in_daemon_thread",
    "prompt_stderr",
    "prompt_stdout",
    "terminal",
]

Prompt = Callable[[str], str]
Write = Callable[[str], None]
Record = Callable[[dict[str, object]], None]
T = TypeVar("T")


class FormGone(Exception):
    """The form completed (or its session ended) while the person was answering it."""


class PiGone(Exception):
    """The connection to Pi ended for good (Pi exited or its relay stopped): nothing more can
    be asked or sent, so no line is waited for."""


class _StdinLines:
    """Lines of file descriptor 0, read with ``os.read``; a read can be given up (``wake``).

    The prompting thread is a daemon that may still be blocked reading when the command ends
    (Ctrl-C); had it gone through ``sys.stdin``, it would hold that buffer's lock and the
    interpreter would abort at exit. A terminal in canonical mode still edits the line.

    A thread reading for a form that went away is woken (a byte on a pipe it also waits on) and
    raises ``FormGone`` without taking a line: nobody has to press Enter for a form that is
    gone, and the next form's prompt gets the next line. What was typed on a terminal for the
    gone form and not yet sent with Enter is discarded.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._lock = threading.Lock()
        self._local = threading.local()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)

    def give_up_when(self, stop: threading.Event) -> None:
        """Reads of this thread raise ``FormGone`` once ``stop`` is set (and ``wake`` called)."""
        self._local.stop = stop

    def wake(self) -> None:
        """Wake the reading thread so that it sees its ``stop``."""
        with contextlib.suppress(BlockingIOError):  # (a wake already pending is enough)
            os.write(self._wake_w, b"!")

    def readline(self) -> str:
        stop: threading.Event | None = getattr(self._local, "stop", None)
        with self._lock:
            while b"\n" not in self._buffer:
                if stop is not None and stop.is_set():
                    _discard_typed_ahead()
                    raise FormGone
                try:
                    ready, _, _ = select.select([0, self._wake_r], [], [])
                except (OSError, ValueError):  # no stdin at all (closed fd 0)
                    ready = [0]
                if self._wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 64)
                    if 0 not in ready:
                        continue
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


def _discard_typed_ahead() -> None:
    """A line half-typed on a terminal for a form that is gone must not answer the next one."""
    with contextlib.suppress(OSError, ImportError):
        import termios

        if os.isatty(0):
            termios.tcflush(0, termios.TCIFLUSH)


_STDIN = _StdinLines()


def _prompt_on(stream: TextIO, text: str) -> str:
    emit(stream, clean(text))
    return _STDIN.readline()


def prompt_stdout(text: str) -> str:
    """``input()`` for the prompting thread: the prompt on stdout, the line from fd 0."""
    return _prompt_on(sys.stdout, text)


def prompt_stderr(text: str) -> str:
    """The same with the prompt on stderr (stdout carries JSON lines with ``--json``)."""
    return _prompt_on(sys.stderr, text)


def in_daemon_thread(work: Callable[[], T]) -> asyncio.Future[T]:
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

    # After Ctrl-C nobody awaits the future; retrieving its exception here keeps asyncio from
    # printing "exception was never retrieved" (an awaiting caller still gets it).
    future.add_done_callback(lambda done: None if done.cancelled() else done.exception())
    threading.Thread(target=run, name="pi-ask-prompt", daemon=True).start()
    return future


class FormWatch:
    """Follows ``client.events()`` (``async with``) to learn when the form being asked stops
    being open."""

    def __init__(self, client: BridgeClient) -> None:
        self._client = client
        self.flow_id: str | None = None
        self.why = ""
        self.stop = threading.Event()  # the form is gone; read by the prompting thread
        self.wake = asyncio.Event()  # the form is gone, or the person finished
        self.pi_gone = asyncio.Event()  # the connection ended for good (for every form)

    async def __aenter__(self) -> FormWatch:
        events = self._client.events()

        async def follow() -> None:
            async for event in events:
                self.see(event)

        self._events = events
        self._follower = asyncio.create_task(follow())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._follower
        await self._events.aclose()

    def begin(self, flow: FlowView) -> None:
        self.flow_id, self.why = flow.flow_id, ""
        self.stop = threading.Event()
        self.wake = asyncio.Event()

    def see(self, event: BridgeEvent) -> None:
        if event.kind == "completed" and event.flow_id == self.flow_id:
            self._mark(f"was completed meanwhile (source {event.source})")
        elif event.kind == "session_ended" and event.reason == "disconnected":
            self.pi_gone.set()
            self._mark("is gone: Pi exited or its relay stopped")
        elif event.kind == "session_ended" and self.flow_id not in self._client.open_flows:
            # (a late session_ended must not stop a form the reconnection has replayed)
            self._mark("is gone: the Pi session ended")

    def _mark(self, why: str) -> None:
        self.why = why
        self.stop.set()
        self.wake.set()
        _STDIN.wake()  # a thread reading a line for this form gives up (prompt_stdout/stderr)

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

    async def ask(
        self, flow: FlowView, work: Callable[[Prompt], T], prompt: Prompt, write: Write
    ) -> T | None:
        """``work(guarded_prompt)`` in a daemon thread; ``None`` when the form went away while
        the person answered (nothing of what they typed is used). Raises ``PiGone`` as soon as
        the connection ends for good, without waiting for the line of a prompt shown."""
        self.begin(flow)
        if self.pi_gone.is_set():
            raise PiGone
        stop = self.stop

        def run() -> T:
            _STDIN.give_up_when(stop)
            return work(self.guard(prompt))

        asking = in_daemon_thread(run)
        wake = self.wake
        asking.add_done_callback(lambda _: wake.set())
        await wake.wait()
        gone = f"! {clean(flow.flow_id)} {self.why}"
        told = not asking.done()
        if told:  # (on a line of its own: the prompt shown ends without one)
            write(f"\n{gone}; not asking it any more")
        try:
            # A prompt reading fd 0 gives up at once; another prompt function (a test's) still
            # has its line waited for, so that it does not answer the next form, unless Pi
            # itself goes away meanwhile.
            result = await self._line_or_pi_gone(asking)
        except PiGone:
            if not told:
                write(f"{gone}; nothing sent")
            raise
        except FormGone:
            if not told:
                write(f"{gone}; not asking it any more")
            if self.pi_gone.is_set():
                raise PiGone from None
            return None
        if self.stop.is_set():
            write(f"{gone}; nothing sent")
            if self.pi_gone.is_set():
                raise PiGone
            return None
        return result

    async def _line_or_pi_gone(self, asking: asyncio.Future[T]) -> T:
        if asking.done():
            return asking.result()
        either = asyncio.Event()
        asking.add_done_callback(lambda _: either.set())
        gone = asyncio.ensure_future(self.pi_gone.wait())
        gone.add_done_callback(lambda _: either.set())
        try:
            await either.wait()
        finally:
            gone.cancel()
        if not asking.done():
            raise PiGone
        return asking.result()


def terminal(*, as_json: bool) -> tuple[Prompt, Write, Record | None]:
    """``pi-ask answer``'s prompt, writer and recorder. With ``as_json`` stdout carries only the
    JSON records (one per submit); forms, messages and prompts go to stderr."""
    if not as_json:
        return prompt_stdout, echo, None

    def say(text: str) -> None:
        emit(sys.stderr, clean(text, multiline=True) + "\n")

    def record(entry: dict[str, object]) -> None:
        emit(sys.stdout, json_line(entry) + "\n")

    return prompt_stderr, say, record
