"""pi-ask answer as a process against a Python relay: Ctrl-C, end of input, --json, and
advice that names the command's own flags."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from pi_ask_sdk.cli.watch import EventPrinter, watch
from pi_ask_sdk.testing import yes_no_params
from tests.interrupts import default_sigint

from .fake_relay import FakeRelay

T = 30.0


async def start_answer(
    relay: FakeRelay, *args: str, stdin: int | None = asyncio.subprocess.PIPE
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pi_ask_sdk.cli",
        "answer",
        *args,
        env={**os.environ, "PI_ASK_RELAY_DIR": str(relay.directory)},
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=default_sigint,  # Ctrl-C works in it even when this suite ignores SIGINT
    )


async def read_until(stream: asyncio.StreamReader | None, marker: str) -> str:
    """What the process wrote up to ``marker`` (prompts end without a newline)."""
    assert stream is not None
    seen = b""
    while marker.encode() not in seen:
        chunk = await asyncio.wait_for(stream.read(4096), T)
        assert chunk, f"ended before {marker!r}: {seen.decode()!r}"
        seen += chunk
    return seen.decode()


@pytest.mark.asyncio
async def test_ctrl_c_while_asking_exits_130_cleanly_and_sends_nothing(relay: FakeRelay) -> None:
    handle = relay.open_form(yes_no_params(), "interrupted")
    proc = await start_answer(relay)
    await read_until(proc.stdout, "deploy> choose")
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), T)
    assert proc.returncode == 130, err
    assert "pi-ask answer: interrupted" in err.decode()
    assert "Traceback" not in err.decode()
    assert relay.received == []
    assert handle.result is None  # still open in Pi


@pytest.mark.asyncio
async def test_end_of_input_exits_1_nothing_accepted(relay: FakeRelay) -> None:
    handle = relay.open_form(yes_no_params(), "eof")
    proc = await start_answer(relay, stdin=asyncio.subprocess.DEVNULL)
    out, err = await asyncio.wait_for(proc.communicate(), T)
    assert proc.returncode == 1, err
    text = " ".join(out.decode().split())
    # Issue 27: it said "forms not answered stay open in Pi", false for a headless Pi.
    assert "stay open in Pi" not in text
    assert f"end of input: stopped; {ANSWERER_GONE}" in text
    assert "Traceback" not in err.decode()
    assert relay.received == []
    assert handle.result is None


@pytest.mark.asyncio
async def test_a_closed_stdin_is_the_end_of_input(relay: FakeRelay) -> None:
    relay.open_form(yes_no_params(), "closed")
    proc = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        'exec "$0" -m pi_ask_sdk.cli answer <&-',  # (a pipe it made itself was taken for stdin)
        sys.executable,
        env={**os.environ, "PI_ASK_RELAY_DIR": str(relay.directory)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), T)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 1, err
    assert f"end of input: stopped; {ANSWERER_GONE}" in " ".join(out.decode().split())
    assert "Traceback" not in err.decode()
    assert relay.received == []


ANSWERER_GONE = (
    "nothing was sent for the forms not answered. In Pi's TUI they stay open (answer them "
    "there or with another bridge); a headless Pi ends each as a tool error for its agent "
    "once no answering bridge has been connected for its grace period "
    "(PI_ASK_RELAY_GRACE_MS, 5 s by default)."
)


async def exit_with_stdin_open(proc: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    """All ``proc`` writes, once it has exited by itself (within ``T``), its stdin left open."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err, _ = await asyncio.wait_for(
        asyncio.gather(proc.stdout.read(), proc.stderr.read(), proc.wait()), T
    )
    return out, err


@pytest.mark.asyncio
async def test_pi_exiting_mid_form_ends_answer_at_once_with_status_3(tmp_path: Path) -> None:
    """Issue 27: Pi exits while the person is being asked. ``pi-ask answer`` said "press
    Enter", waited for a line nobody would type, then exited 1 (its help says 3)."""
    pi = await asyncio.create_subprocess_exec("sleep", "300")  # Pi's pid, for the socket name
    relay = FakeRelay(tmp_path / "relays", pid=pi.pid)
    await relay.start()
    proc: asyncio.subprocess.Process | None = None
    try:
        relay.open_form(yes_no_params(), "mid-form")
        proc = await start_answer(relay)  # stdin open and silent: the person has not typed
        await read_until(proc.stdout, "deploy> choose")
        # Pi quits: its relay announces the session's end and closes, and the process exits.
        await relay.end_session_and_close("quit")
        pi.kill()
        await pi.wait()
        # No Enter is ever typed, and stdin stays open until pi-ask has exited: closing it (as
        # communicate() does) is the end of input, which a loaded machine may let pi-ask read
        # before it reads Pi's end (exit status 1, not 3).
        out, err = await exit_with_stdin_open(proc)
    finally:
        await relay.stop()
        if pi.returncode is None:
            pi.kill()
            await pi.wait()
        if proc is not None:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            assert proc.stdin is not None
            proc.stdin.close()
    assert proc.returncode == 3, err
    shown, said = out.decode(), err.decode()
    assert "press Enter" not in shown
    # (Pi announced its session's end before it went: that is what the form is told)
    assert "! tool:mid-form is gone: the Pi session ended; not asking it any more" in shown
    assert said == (
        "pi-ask answer: The connection to the host was lost: Pi exited or its relay stopped.\n"
    )
    assert relay.received == []


@pytest.mark.asyncio
async def test_a_form_gone_while_asked_takes_no_line_so_scripted_input_stays_in_step(
    relay: FakeRelay,
) -> None:
    """Issue 27: a form completed in Pi while its prompt waited took the next line typed (the
    console asked for Enter), so every later form's answers were one line off."""
    first = relay.open_form(yes_no_params(), "first")
    proc = await start_answer(relay, "--count", "2")
    try:
        await read_until(proc.stdout, "deploy> choose")
        first.cancel()  # answered in Pi's TUI meanwhile
        second = relay.open_form(yes_no_params(), "second")
        shown = await read_until(proc.stdout, "tool:second")
        assert "! tool:first was completed meanwhile (source tool); not asking it any more" in (
            shown
        )
        out, err = await asyncio.wait_for(proc.communicate(b"no\n\ns\n"), T)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err
    assert "press Enter" not in out.decode()
    assert second.result is not None
    assert second.result.answers["deploy"].values == ["no"]


@pytest.mark.asyncio
async def test_json_puts_one_record_per_submit_on_stdout(relay: FakeRelay) -> None:
    handle = relay.open_form(yes_no_params(), "json")
    proc = await start_answer(relay, "--json", "--count", "1")
    out, err = await asyncio.wait_for(proc.communicate(b"no\n\ns\n"), T)
    assert proc.returncode == 0, err
    [record] = [json.loads(line) for line in out.decode().splitlines()]
    assert record["flowId"] == "tool:json"
    assert record["outcome"] == "accepted"
    assert record["response"]["answers"] == {"deploy": {"values": ["no"]}}
    assert "deploy> choose" in err.decode()  # prompts and forms on stderr
    assert handle.result is not None


@pytest.mark.asyncio
async def test_several_pis_advice_names_pid_and_socket_flags(relay: FakeRelay) -> None:
    other = FakeRelay(relay.directory, pid=os.getppid())
    await other.start()
    try:
        proc = await start_answer(relay, stdin=asyncio.subprocess.DEVNULL)
        _, err = await asyncio.wait_for(proc.communicate(), T)
    finally:
        await other.stop()
    text = err.decode()
    assert proc.returncode == 3, text
    assert "2 Pi processes run the pi-ask relay; choose one: --pid " in text
    assert f"--pid {os.getppid()} (or --socket {other.path})" in text
    assert f"--pid {os.getpid()} (or --socket {relay.path})" in text
    assert "RelayTransport" not in text


@pytest.mark.asyncio
async def test_watch_prints_a_hostile_form_inert(relay: FakeRelay) -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\x9b1m\u202e"
    relay.open_form(yes_no_params(title=f"T{evil}", prompt=f"Deploy?{evil}"), f"c{evil}")
    lines: list[str] = []
    await watch(lines.append, directory=relay.directory, duration=0.3, poll=0.05)
    text = "\n".join(lines)
    assert "Deploy?" in text
    for bad in ("\x1b", "\x9b", "\u202e"):
        assert bad not in text
    # shown, inert: each control as its escape, so the sequence can be read but never acts
    assert "Deploy?\\u001b]0;pwned\\u0007\\u001b[2J\\u009b1m\\u202e" in text


@pytest.mark.parametrize("as_json", [False, True])
def test_watch_survives_a_payload_too_deep_to_print(as_json: bool) -> None:
    lines: list[str] = []
    printer = EventPrinter(4242, lines.append, as_json=as_json)
    deep: object = []
    for _ in range(100_000):
        deep = [deep]
    printer.message("pi-agent-ask:submit-result", {"deep": deep})
    printer.message("pi-agent-ask:submit-result", {"ok": True})
    assert len(lines) == 2
    assert "payload not printable (RecursionError)" in lines[0]
    assert "true" in lines[1].lower()


@pytest.mark.asyncio
async def test_watch_stops_when_its_output_is_closed(relay: FakeRelay) -> None:
    relay.open_form(yes_no_params(), "read-by-nobody")
    lines: list[str] = []

    def write(text: str) -> None:
        if lines:
            raise BrokenPipeError(32, "Broken pipe")
        lines.append(text)  # the heading; the form (replayed on connect) finds the pipe closed

    with pytest.raises(BrokenPipeError):
        await asyncio.wait_for(watch(write, directory=relay.directory, duration=60), T)
