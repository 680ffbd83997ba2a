"""Fault injection into the stand-in host and the real-Pi kit (issue 21).

A stopped or silent stand-in server, a killed Pi, long socket paths, two servers on one path,
two sessions and two Pis on one server, back-to-back tool calls: every case ends within its
bound with a typed error or the right result, never a hang, a bare ``OSError`` or a result that
belongs to another session or call.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pi_ask_sdk import SubmitAccepted, SubmitLost
from pi_ask_sdk.testing.errors import PiNotInstalled, StandinInUse, StandinPathTooLong
from pi_ask_sdk.testing.realpi import PiRecord, install_pi, locate_pi
from pi_ask_sdk.testing.standin import ENV_SOCKET, StandinServer, StandinThread
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    make_private_dir,
    next_event,
    next_flow,
    running_pi,
    single_question,
)

pytestmark = pytest.mark.pi

ENV_TIMEOUT = "PI_ASK_STANDIN_TIMEOUT"


# --- helpers ------------------------------------------------------------------------------------


def answer(pi: PiProcess, flow_id: str, value: str) -> None:
    """A bridge on Pi's relay answers ``flow_id`` with option ``value`` (accepted)."""

    async def bridge() -> None:
        async with pi.client() as client:
            flow = await next_flow(client.flows(), flow_id)
            ticket = await client.submit(flow, choose(flow, value))
            assert isinstance(await client.await_result(ticket, timeout=TIMEOUT), SubmitAccepted)

    asyncio.run(bridge())


def wait_open(pi: PiProcess, flow_id: str) -> None:
    """Until a bridge on Pi's relay sees ``flow_id`` open (bounded)."""

    async def bridge() -> None:
        async with pi.client() as client:
            await next_flow(client.flows(), flow_id)

    asyncio.run(bridge())


def tool_end(pi: PiProcess, call_id: str, since: int, timeout: float) -> PiRecord:
    return pi.wait_record(
        lambda r: r.get("type") == "tool_execution_end" and r.get("toolCallId") == call_id,
        since=since,
        timeout=timeout,
    )


_SERVER = """
import sys
from pi_ask_sdk.testing.standin import StandinThread
with StandinThread(sys.argv[1]):
    print("ready", flush=True)
    sys.stdin.read()
"""


@contextmanager
def server_process(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A stand-in server in a process of its own (so that it can be stopped with SIGSTOP)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "the server did not start in 30 s"
        assert proc.stdout.readline() == "ready\n", "the server did not start"
        yield proc
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait(10)


@contextmanager
def pi_on(
    env: PiEnv, workdir: Path, shared_tmp: Path, socket_path: Path, reply_timeout: float
) -> Iterator[PiProcess]:
    """A Pi whose stand-in extension talks to the server at ``socket_path``."""
    extra = {ENV_SOCKET: str(socket_path), ENV_TIMEOUT: f"{reply_timeout:g}"}
    with running_pi(env, workdir, shared_tmp=shared_tmp, extra_env=extra) as pi:
        yield pi


def short_dir(tmp_path: Path) -> Path:
    """A private directory with a path short enough for a socket in it."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp")
    directory = make_private_dir(base / f"pi-ask-faults-{os.getpid()}-{tmp_path.name[-12:]}")
    return directory


# --- a stopped or silent stand-in server never hangs Pi ------------------------------------------


@contextmanager
def stopped_with_a_form_open(
    env: PiEnv, shared_tmp: Path, tmp_path: Path, call_id: str, reply_timeout: float
) -> Iterator[tuple[PiProcess, int]]:
    """A Pi whose ``ask_user`` call ``call_id`` is open when its server gets SIGSTOP; yields
    the Pi and its record index from before the call."""
    directory = short_dir(tmp_path)
    try:
        with (
            server_process(directory / "s.sock") as server,
            pi_on(env, tmp_path / "pi", shared_tmp, directory / "s.sock", reply_timeout) as pi,
            pi.answering(),  # headless: the form opens for an answering bridge only
        ):
            since = pi.mark()
            wait_open(pi, pi.call_ask_user(single_question(), tool_call_id=call_id))
            os.kill(server.pid, signal.SIGSTOP)
            yield pi, since
    finally:
        shutil.rmtree(directory)  # (a killed server leaves its socket)


def test_an_abort_ends_the_call_at_once_when_the_server_is_stopped(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    # a long reply bound: only the abort can end this call in time
    with stopped_with_a_form_open(pi_installation, shared_tmp, tmp_path, "stopped", 60) as opened:
        pi, since = opened
        started = time.monotonic()
        pi.request({"type": "abort"})
        record = tool_end(pi, "stopped", since, timeout=TIMEOUT)
        assert time.monotonic() - started < TIMEOUT
        # the core's cancelled result, handed over when the form opened
        assert record["result"]["details"]["cancelled"] is True
        assert pi.alive()


def test_a_stopped_server_is_noticed_and_the_open_call_ends(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with stopped_with_a_form_open(pi_installation, shared_tmp, tmp_path, "noticed", 1) as opened:
        pi, since = opened
        started = time.monotonic()
        record = tool_end(pi, "noticed", since, timeout=TIMEOUT)  # two missed pings: ~2 s
        assert time.monotonic() - started < TIMEOUT
        assert record["result"]["details"]["cancelled"] is True
        # the link is dead: the next call fails at once, with a reason
        since = pi.mark()
        pi.call_ask_user(single_question(), tool_call_id="after")
        after = tool_end(pi, "after", since, timeout=TIMEOUT)
        assert after.get("isError") is True
        assert "not connected" in json.dumps(after["result"])


def test_a_silent_server_fails_the_call_and_the_command_within_the_bound(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    directory = short_dir(tmp_path)
    path = directory / "s.sock"
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # accepts, never answers
    silent.bind(str(path))
    path.chmod(0o600)
    silent.listen(8)
    try:
        with pi_on(pi_installation, tmp_path / "pi", shared_tmp, path, reply_timeout=1) as pi:
            since = pi.mark()
            started = time.monotonic()
            pi.call_ask_user(single_question(), tool_call_id="silent")
            record = tool_end(pi, "silent", since, timeout=TIMEOUT)
            assert time.monotonic() - started < TIMEOUT
            assert record.get("isError") is True
            text = json.dumps(record["result"])
            assert "did not answer within 1 s" in text
            assert ENV_TIMEOUT in text
            report = pi.test_command("list", "", timeout=TIMEOUT)
            assert report["ok"] is False
            assert report.get("error") == "host_unavailable"
    finally:
        silent.close()
        path.unlink()
        directory.rmdir()


# --- a killed Pi: the bridge is told the truth ---------------------------------------------------


@pytest.mark.parametrize("run", range(3))
def test_a_pi_killed_during_a_submit_is_a_disconnect(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path, run: int
) -> None:
    async def scenario(pi: PiProcess) -> None:
        async with pi.client() as client:
            flows, events = client.flows(), client.events()
            flow = await next_flow(flows, pi.open_form(single_question()))
            pi.kill(signal.SIGSTOP)  # Pi cannot acknowledge ...
            ticket = await client.submit(flow, choose(flow, "a"))
            pi.kill(signal.SIGKILL)  # ... and never will, nor end its session
            lost = await client.await_result(ticket, timeout=TIMEOUT)
            assert isinstance(lost, SubmitLost)
            assert lost.reason == "disconnected"
            ended = await next_event(events, "session_ended")
            assert ended.kind == "session_ended"
            assert ended.reason == "disconnected"

    with running_pi(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp) as pi:
        asyncio.run(scenario(pi))


# --- results belong to their session and call ----------------------------------------------------


def test_back_to_back_calls_and_a_new_session_get_their_own_results(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp) as pi:
        with pi.answering():  # headless: the forms open for an answering bridge only
            # right after each result Pi's model is still replying: the kit waits until idle
            for value in ("a", "b", "a", "b", "a"):
                flow_id = pi.call_ask_user(single_question(), tool_call_id="same")
                answer(pi, flow_id, value)
                assert pi.result(flow_id).answers["q"].values == [value]
        pi.wait_idle()
        pi.new_session()
        with pi.answering():  # (the new session's relay is a new connection)
            flow_id = pi.call_ask_user(single_question(), tool_call_id="same")
            answer(pi, flow_id, "b")
            assert pi.result(flow_id).answers["q"].values == ["b"]
        opened = pi.open_form(single_question())
        assert pi.complete_form(opened, {"kind": "cancel"})["ok"] is True
        assert pi.result(opened).cancelled


def test_two_pis_on_one_server_get_their_own_results(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with (
        StandinThread() as standin,
        running_pi(
            pi_installation, tmp_path / "one", shared_tmp=shared_tmp, standin=standin
        ) as one,
        running_pi(
            pi_installation, tmp_path / "two", shared_tmp=shared_tmp, standin=standin
        ) as two,
        one.answering(),
        two.answering(),
    ):
        first, second = one.call_ask_user(single_question()), two.call_ask_user(single_question())
        assert first == second  # the same default tool call id in both
        answer(two, second, "b")
        answer(one, first, "a")
        assert one.result(first).answers["q"].values == ["a"]
        assert two.result(second).answers["q"].values == ["b"]


def test_a_pi_without_agent_idle_in_time_is_a_typed_error(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    from pi_ask_sdk.testing.realpi import PiFailed

    with (
        running_pi(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp) as pi,
        pi.answering(),
    ):
        flow_id = pi.call_ask_user(single_question(), tool_call_id="open")
        wait_open(pi, flow_id)  # the agent waits on this form
        started = time.monotonic()
        with pytest.raises(PiFailed, match="still busy after 1 s"):
            pi.call_ask_user(single_question(), tool_call_id="second", timeout=1)
        assert time.monotonic() - started < TIMEOUT
        pi.request({"type": "abort"})  # (so that Pi can quit at once)


# --- the stand-in server's socket ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_long_socket_path_is_a_typed_error(tmp_path: Path) -> None:
    deep = make_private_dir(tmp_path / ("d" * 60) / ("e" * 60))
    path = deep / "standin.sock"
    with pytest.raises(StandinPathTooLong) as error:
        await StandinServer(path).start()
    size = len(os.fsencode(path))
    message = str(error.value)
    assert str(path) in message
    assert f"{size} bytes" in message
    assert "107" in message
    assert "socket_path" in message  # what to do
    assert error.value.path == path
    assert not path.exists()


@pytest.mark.asyncio
async def test_a_second_server_refuses_a_live_socket_and_replaces_a_stale_one(
    tmp_path: Path,
) -> None:
    directory = short_dir(tmp_path)
    path = directory / "s.sock"
    try:
        async with StandinServer(path) as first:
            with pytest.raises(StandinInUse) as error:
                await StandinServer(path).start()
            assert str(path) in str(error.value)
            with pytest.raises(StandinInUse):  # (in a thread of its own, as the kit runs it)
                await asyncio.to_thread(StandinThread(path).start)
            # the first server still answers there
            reader, writer = await asyncio.open_unix_connection(str(first.path))
            writer.write(b'{"type":"ping"}\n')
            assert json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT)) == {
                "type": "pong"
            }
            writer.close()
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(path))  # bound, never listening: nothing answers
        stale.close()
        assert path.is_socket()
        async with StandinServer(path) as second:
            reader, writer = await asyncio.open_unix_connection(str(second.path))
            writer.close()
    finally:
        directory.rmdir()


# --- the install cache is verified, not trusted --------------------------------------------------

_LINKING_NPM = """#!/usr/bin/env bash
# npm ci from the already installed Pi, hard-linked (same files as the real npm ci gave)
set -euo pipefail
[[ "$1" == ci && -f package-lock.json ]]
cp -al "$PI_SOURCE/node_modules" node_modules
"""


def test_a_corrupted_cache_is_named_reinstalled_and_runs_a_real_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = Path(pi_installation.node_modules).parent
    cache = installed.parent / f".node-faults-{os.getpid()}"  # same file system: hard links
    copy = cache / installed.name
    try:
        cache.mkdir()
        # "/.": the contents, also when the installation is a symlink (a checkout sharing
        # another's Pi): cp -a would copy the symlink, and the test would break the real Pi.
        subprocess.run(["cp", "-al", f"{installed}/.", str(copy)], check=True, timeout=120)
        assert locate_pi(pi_installation.flavour, cache).version == pi_installation.version
        cli = copy / Path(pi_installation.pi_cli).relative_to(installed)
        assert not copy.is_symlink()
        assert cli.resolve().is_relative_to(copy.resolve())  # never the real installation's
        cli.unlink()  # replaced, not written through the link into the real install
        cli.write_bytes(b"")
        with pytest.raises(PiNotInstalled) as broken:
            locate_pi(pi_installation.flavour, cache)
        assert broken.value.problem == "stale"
        assert "0 bytes" in str(broken.value)
        assert str(copy) in str(broken.value)

        npm = tmp_path / "bin" / "npm"
        npm.parent.mkdir()
        npm.write_text(_LINKING_NPM)
        npm.chmod(0o755)
        monkeypatch.setenv("PATH", f"{npm.parent}:{os.environ['PATH']}")
        monkeypatch.setenv("PI_SOURCE", str(installed))
        env = install_pi(pi_installation.flavour, cache)
        assert Path(env.pi_cli).stat().st_size == Path(pi_installation.pi_cli).stat().st_size
        with running_pi(env, tmp_path / "pi", shared_tmp=shared_tmp) as pi:
            assert pi.request({"type": "get_state"})["success"] is True
    finally:
        shutil.rmtree(cache, ignore_errors=True)
