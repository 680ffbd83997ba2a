"""The stand-in server without Pi: a Python peer speaks the extension's side of the link.

What a real Pi sees through the extension is in tests/integration/test_standin.py; here the
server's own promises: private socket, decisions from FlowHost, bad lines survived, a closed
link disposes its flows without ``completed``.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from pi_ask_sdk.testing.standin import ENV_SOCKET, StandinServer, standin_extension_path
from pi_ask_sdk.transports.relay import UnsafeRelayPath

from .conftest import TIMEOUT

FORM = {
    "questions": [
        {"id": "q", "prompt": "Which?", "options": [{"value": "a"}, {"value": "b", "label": "B"}]}
    ]
}


class Peer:
    """The extension's side of the link."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps(message).encode() + b"\n")
        await self.writer.drain()

    async def read(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), TIMEOUT)
        assert line, "the server closed the link"
        message = json.loads(line)
        assert isinstance(message, dict)
        return message


@asynccontextmanager
async def peer(server: StandinServer) -> AsyncIterator[Peer]:
    reader, writer = await asyncio.open_unix_connection(str(server.path))
    link = Peer(reader, writer)
    await link.send({"type": "hello", "pid": 1, "cwd": "/"})
    try:
        yield link
    finally:
        writer.close()


def test_extension_is_shipped_beside_the_module() -> None:
    path = standin_extension_path()
    assert path.is_file()
    assert "PI_ASK_STANDIN_SOCKET" in path.read_text()


@pytest.mark.asyncio
async def test_private_socket_and_directory() -> None:
    async with StandinServer() as server:
        assert stat.S_IMODE(os.lstat(server.path).st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(server.path.parent).st_mode) == 0o700
        assert server.environment() == {ENV_SOCKET: str(server.path)}
    assert not server.path.exists()
    assert not server.path.parent.exists()


@pytest.mark.asyncio
async def test_refuses_a_shared_directory(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    with pytest.raises(UnsafeRelayPath, match="chmod 700"):
        await StandinServer(shared / "s.sock").start()


@pytest.mark.asyncio
async def test_open_submit_and_tool_results_come_from_the_core() -> None:
    async with StandinServer() as server, peer(server) as link:
        await link.send({"type": "command", "ref": 1, "name": "open", "args": "{bad"})
        refused = await link.read()
        assert refused["report"]["error"] == "bad_arguments"

        await link.send(
            {"type": "tool", "ref": 2, "toolCallId": "t1", "params": FORM, "mode": "tui"}
        )
        opened = await link.read()
        assert (opened["type"], opened["flowId"]) == ("opened", "tool:t1")
        assert opened["cancelled"]["cancelled"] is True
        started = await link.read()
        assert started["channel"] == "pi-agent-ask:started"
        assert started["data"]["questions"][0]["options"][0]["label"] == "A"  # derived

        # garbage on the link is skipped; the session and its form survive
        link.writer.write(b"not json\n[1]\n")
        submit = {
            "version": 1,
            "requestId": "r1",
            "flowId": "tool:t1",
            "response": {"kind": "answer", "answers": {"q": {"values": ["b"]}}},
        }
        await link.send({"type": "submit", "data": submit})
        messages = [await link.read() for _ in range(3)]
        kinds = [(m["type"], m.get("channel")) for m in messages]
        # The tool call resumes after the submit's acknowledgement, as in the real host: the
        # agent's result (on which a harness may stop Pi) never cuts a bridge's ack off.
        assert kinds == [
            ("emit", "pi-agent-ask:completed"),
            ("emit", "pi-agent-ask:submit-result"),
            ("result", None),
        ]
        result = messages[2]
        assert (result["ref"], result["abort"]) == (2, False)
        assert result["result"]["answers"]["q"]["labels"] == ["B"]
        assert json.loads(result["text"]) == result["result"]
        assert messages[1]["data"]["ok"] is True
        assert [e.flow_id for e in server.completed] == ["tool:t1"]

        await link.send({"type": "tool", "ref": 3, "params": {"questions": []}})
        invalid = await link.read()
        assert invalid["type"] == "result"
        assert invalid["result"]["error"]["kind"] == "invalid_input"
        await link.send({"type": "tool", "ref": 4, "params": {"questions": 5}})
        malformed = await link.read()
        assert malformed["type"] == "error"
        assert "questions" in malformed["message"]


@pytest.mark.asyncio
async def test_a_closed_link_disposes_its_flows_without_completed() -> None:
    async with StandinServer() as server:
        async with peer(server) as link:
            await link.send(
                {"type": "tool", "ref": 1, "toolCallId": "t2", "params": FORM, "mode": "tui"}
            )
            assert (await link.read())["type"] == "opened"
            assert (await link.read())["channel"] == "pi-agent-ask:started"
            [session] = server.sessions
            assert session.host is not None
            [handle] = session.host.active_flows
            done = asyncio.Event()
            handle.add_done_callback(lambda _: done.set())
        await asyncio.wait_for(done.wait(), TIMEOUT)
        assert handle.state == "disposed"
        assert session.host.is_closed
        assert server.completed == []


def test_cli_prints_the_extension_path(capsys: pytest.CaptureFixture[str]) -> None:
    from pi_ask_sdk.cli import main

    assert main(["standin-path"]) == 0
    assert capsys.readouterr().out.strip() == str(standin_extension_path())


def run_pytest(
    directory: Path, test: str, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """pytest (with this package's plugin) on a one-test project of ``test``'s source."""
    (directory / "test_x.py").write_text(test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_real_pi_fixture_is_off_unless_asked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PI_ASK_REAL_PI", "CI")}
    test = "def test_x(pi_ask_real_pi):\n    raise AssertionError('must not run')\n"
    done = run_pytest(tmp_path, test, env, "-rs", "-m", "pi_ask_real_pi")
    assert "1 skipped" in done.stdout, done.stdout
    assert "enable with --pi-ask-real-pi" in done.stdout
    assert "headless (RPC mode)" not in done.stdout  # the header speaks only when it is on


def test_the_plugin_header_says_pi_runs_headless(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "def test_x():\n    pass\n", {**os.environ, "PI_ASK_REAL_PI": "1"})
    assert done.returncode == 0, done.stdout
    assert "pi-ask real Pi: headless (RPC mode)" in done.stdout
    assert "connected as an answerer" in done.stdout


def test_the_session_uses_its_server_through_the_public_seam_only() -> None:
    """Issue 22: ``_session`` imports nothing of ``_server`` (no cycle) and calls no private
    method of its owner; ``StandinServer`` is a ``SessionOwner``."""
    import ast
    import inspect

    from pi_ask_sdk.testing.standin import SessionOwner, _session

    tree = ast.parse(inspect.getsource(_session))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "_server" not in imported
    owner_calls = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "_owner"
    }
    assert owner_calls == {"present_single_as_multi", "session_started", "session_completed"}
    owner: SessionOwner = StandinServer()  # (mypy checks the protocol)
    assert owner.present_single_as_multi is False


@pytest.mark.asyncio
async def test_closing_with_a_link_open_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    # pi-ask try closes its server while a killed Pi's link is still open: no asyncio traceback
    # (Python 3.11's start_unix_server logs a cancelled connection handler as an error).
    server = await StandinServer().start()
    async with peer(server) as link:
        await link.send({"type": "command", "ref": 1, "name": "list", "args": ""})
        assert (await link.read())["type"] == "report"
        with caplog.at_level("ERROR", logger="asyncio"):
            await server.close()
        assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
