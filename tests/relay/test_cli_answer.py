"""pi-ask answer as a process against a Python relay: Ctrl-C, end of input, --json, and
advice that names the command's own flags."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from pi_ask_sdk.cli.watch import EventPrinter, watch
from pi_ask_sdk.testing import yes_no_params

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
    assert "end of input: stopped; forms not answered stay open in Pi" in out.decode()
    assert "Traceback" not in err.decode()
    assert relay.received == []
    assert handle.result is None


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
