"""``pi-ask try``: a real Pi with the relay and the stand-in host, waiting on a live form.

It installs the pinned Pi from npm into the cache once (``pi_ask_sdk.testing.realpi.install_pi``),
starts it headless (RPC mode, offline, its own agent directory) with the relay listening in the
usual relay directory, so ``pi-ask answer``, ``pi-ask watch`` or your bridge
(``BridgeClient.connect()``) find it. Headless, the host opens a form only while a bridge that
answers forms is connected (the relay is then its external-UI provider), so ``try`` waits for
one, then makes Pi's scripted model call ``ask_user`` with a form. It prints each completed
result (the tool result Pi's agent receives) and stops after ``--count`` forms or on Ctrl-C.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from pi_ask_core import InvalidForm
from pi_ask_core.forms import parse_form
from pi_ask_sdk.testing.realpi import (
    Flavour,
    PiFailed,
    PiNotInstalled,
    PiProcess,
    PiRecord,
    install_pi,
    locate_pi,
    running_pi,
)

from .demo import DEMO_FORM
from .text import clean, json_line
from .usage import EXIT_FAILED, EXIT_OK, EXIT_RUNTIME, usage_error

__all__ = ["FormUnreadable", "describe_failure", "load_form", "run", "try_pi"]

_INSTALL_SIZE: Mapping[Flavour, str] = {"current": "380 MB", "legacy": "220 MB"}
"""``du -sh`` of an install (Pi 1.6.0 with node 22; Pi 0.74.2), as ``pi-ask try --help`` says."""

_POLL = 0.5
"""How often (s) the wait for a person's answer checks that Pi is still alive."""


class FormUnreadable(ValueError):
    """``--form`` names no readable JSON object; the message says which file and where."""


def _form_name(source: str) -> str:
    return "on stdin" if source == "-" else source


def load_form(source: str | None) -> Mapping[str, object]:
    """The ask_user input in file ``source`` (``-``: stdin), or the demo form.

    Raises ``FormUnreadable`` naming the file (and the line and column of a JSON error)."""
    if source is None:
        return DEMO_FORM
    name = _form_name(source)
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as error:
        raise FormUnreadable(f"cannot read the form {source}: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        why = f"{error.reason} at byte {error.start}"
        raise FormUnreadable(f"the form {name} is not UTF-8: {why}") from None
    try:
        form = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise FormUnreadable(f"the form {name} is not JSON: {where}: {error.msg}") from None
    except RecursionError:
        raise FormUnreadable(f"the form {name} is nested too deeply to read") from None
    if not isinstance(form, dict):
        raise FormUnreadable(f"the form {name} is not a JSON object (ask_user input is one)")
    return form


def _wait_tool_result(pi: PiProcess, call_id: str, since: int) -> PiRecord:
    """The ``tool_execution_end`` record of ``call_id``: the result Pi's agent receives."""

    def done(record: PiRecord) -> bool:
        return record.get("type") == "tool_execution_end" and record.get("toolCallId") == call_id

    # A person answers in their own time: wait in short bounded steps while Pi lives.
    while True:
        try:
            return pi.wait_record(done, since=since, timeout=_POLL)
        except PiFailed:
            if not pi.alive():
                raise PiFailed(f"Pi exited; stderr:\n{pi.stderr_tail()}") from None


def _said(result: object) -> str:
    """What the model reads of a tool result: the text of its ``content``, shown inert."""
    content = result.get("content") if isinstance(result, dict) else None
    texts = [
        item["text"]
        for item in (content if isinstance(content, list) else [])
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    return clean(" ".join(texts), multiline=True) if texts else "(no text)"


def describe_failure(record: PiRecord) -> str | None:
    """What went wrong with an ``ask_user`` call, in words (None when it returned a result):
    a tool error (e.g. every answering bridge left and the grace period ran out), a form the
    host refused (its issues, one a line), or a result without details."""
    result = record.get("result")
    if record.get("isError"):
        return f"the ask_user call failed (Pi's agent got a tool error): {_said(result)}"
    details = result.get("details") if isinstance(result, dict) else None
    if not isinstance(details, dict):
        return f"the ask_user call returned no result details; Pi's agent read: {_said(result)}"
    error = details.get("error")
    if error is None:
        return None
    issues = error.get("issues") if isinstance(error, dict) else None
    lines = [
        f"- {clean(str(issue.get('path', '')))}: {clean(str(issue.get('message', '')))}"
        for issue in (issues if isinstance(issues, list) else [])
        if isinstance(issue, dict)
    ]
    if not lines:
        lines = [f"- {_said(result)}"]
    return "the host refused the form (Pi's agent got its invalid-input result):\n" + "\n".join(
        lines
    )


def try_pi(
    *,
    form: Mapping[str, object],
    count: int = 1,
    flavour: Flavour = "current",
    install: bool = True,
    host_extension: Path | None = None,
    out: TextIO | None = None,
    on_ready: Callable[[PiProcess], None] | None = None,
) -> int:
    """Run ``pi-ask try``; returns the exit status (0 once ``count`` forms completed)."""
    from pi_ask_sdk.transports.relay import relay_dir

    stream = sys.stdout if out is None else out  # (now: a default would bind it at import)
    say: Callable[[str], None] = lambda text: print(text, file=stream, flush=True)  # noqa: E731
    if install:
        try:
            env = locate_pi(flavour)
        except PiNotInstalled as missing:
            size = _INSTALL_SIZE[flavour]
            say(
                f"installing the pinned Pi ({flavour}, about {size}) from npm into "
                f"{missing.path} (once; PI_ASK_PI_CACHE moves it; Ctrl-C stops) ..."
            )
            env = install_pi(flavour)
    else:
        env = locate_pi(flavour)
    with (
        tempfile.TemporaryDirectory(prefix="pi-ask-try-") as tmp,
        running_pi(env, Path(tmp), relay_dir=relay_dir(), host_extension=host_extension) as pi,
    ):
        host = str(host_extension) if host_extension else "the stand-in host (pi_ask_core)"
        say(
            f"Pi {env.version} runs headless (pid {pi.pid}), in {pi.mode} mode, with the "
            f"relay and {host}."
        )
        say(f"relay socket: {pi.socket_path}")
        say(
            "Headless, a form opens only while a bridge that answers forms is connected "
            "(observers such as pi-ask watch do not count)."
        )
        if on_ready is not None:
            on_ready(pi)
        for n in range(1, count + 1):
            if pi.relay_clients()[0] < 1:
                say("Waiting for a bridge. Answer in another terminal:")
                say(f"    pi-ask answer --pid {pi.pid}")
                say("or with your bridge (BridgeClient.connect()). Ctrl-C stops.")
                pi.wait_answerer(timeout=None)
            since = pi.mark()
            flow_id = pi.call_ask_user(form, tool_call_id=f"try-{n}")
            say(f"A bridge is connected; Pi's model called ask_user: form {flow_id} opens.")
            record = _wait_tool_result(pi, flow_id.removeprefix("tool:"), since)
            failed = describe_failure(record)
            if failed is not None:
                say(failed)
                return EXIT_FAILED
            details = record["result"]["details"]
            if details.get("cancelled") is True:
                say(
                    f"{clean(flow_id)} ended cancelled: cancelled by the bridge (Pi then ends "
                    "the agent's turn), or the bridge left before the form opened (the host's "
                    "non-interactive result)."
                )
            say(f"completed {clean(flow_id)}; the agent's ask_user result:")
            say(json_line(details, indent=2))
    return EXIT_OK


def run(form: str | None, count: int, flavour: Flavour, host: str | None) -> int:
    """``pi-ask try`` from its arguments: 0 done, 1 the host refused the form or the call failed
    (every answering bridge left), 2 bad arguments
    (an invalid form included: checked before Pi starts), 3 Pi could not be installed, failed or
    exited; problems are a message on stderr, not a traceback."""
    try:
        params = load_form(form)
    except FormUnreadable as error:
        return usage_error("try", str(error))
    try:
        # The one rules engine decides, before Pi is installed or started.
        parse_form(params, cwd=Path.cwd())
    except InvalidForm as error:
        name = "the demo form" if form is None else f"the form {_form_name(form)}"
        return usage_error("try", f"{name} is invalid: {error}")
    host_path = Path(host).resolve() if host else None
    if host_path is not None and not host_path.exists():
        return usage_error("try", f"no such host extension: {host_path}")
    try:
        return try_pi(form=params, count=count, flavour=flavour, host_extension=host_path)
    except (PiNotInstalled, PiFailed) as error:
        print(f"pi-ask try: {clean(str(error), multiline=True)}", file=sys.stderr)
        return EXIT_RUNTIME
