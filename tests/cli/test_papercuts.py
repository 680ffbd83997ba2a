"""What a new user trying the wheel tripped over (issue 22): each test failed before its fix.

The real-Pi ones (``pi-ask try`` and Ctrl-C, a killed Pi, odd text) are in
tests/integration/test_try_papercuts.py; the console example's Ctrl-C in tests/examples.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pi_ask_sdk.cli import main
from pi_ask_sdk.cli.usage import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from pi_ask_sdk.transports.relay import UnsafeRelayPath, check_relay_dir
from tests.relay.fake_relay import FakeRelay


def closed_pipe_run(*args: str) -> subprocess.CompletedProcess[str]:
    """``pi-ask ARGS | head -0``, deterministically: stdout is a pipe whose reader is gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "pi_ask_sdk.cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args", [["demo", "--json"], ["demo"], ["schema"], ["docs", "relay"], ["--help"]]
)
def test_a_reader_that_goes_away_gets_no_traceback(args: list[str]) -> None:
    done = closed_pipe_run(*args)
    assert done.stderr == ""
    # The command did its work; only its reader left early (as `pi-ask schema | head`).
    assert done.returncode == EXIT_OK


def test_demo_json_lines_keep_their_order() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_ask_sdk.cli", "demo", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    channels = [json.loads(line)["channel"] for line in done.stdout.splitlines()]
    assert channels == [
        "pi-agent-ask:started",
        "pi-agent-ask:submit",
        "pi-agent-ask:completed",
        "pi-agent-ask:submit-result",
    ]


def test_a_shared_relay_directory_gets_told_to_use_a_private_one(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # what /tmp is
    with pytest.raises(UnsafeRelayPath) as raised:
        check_relay_dir(shared)
    message = str(raised.value)
    assert "chmod 700" not in message
    assert "shared directory" in message
    assert "PI_ASK_RELAY_DIR" in message
    assert "private directory" in message
    # A directory of one's own that is merely too open still gets the chmod advice.
    own = tmp_path / "own"
    own.mkdir(mode=0o755)
    own.chmod(0o755)
    with pytest.raises(UnsafeRelayPath, match=r"chmod 700"):
        check_relay_dir(own)


def test_doctor_on_a_shared_directory_advises_a_private_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(shared))
    assert main(["doctor"]) == EXIT_FAILED
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("[fail] relay directory")]
    assert "chmod 700" not in line
    assert "private directory" in line


@pytest.mark.asyncio
async def test_doctor_checks_a_socket_given_with_socket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SSH recipe: a socket forwarded under a name that is no pid, outside the directory
    this shell uses; doctor checks only it (node and Pi are on the other machine)."""
    relay = FakeRelay(tmp_path / "forwarded", name="pi-buildbox.sock")
    relay.hello_extra = {"cwd": "/far\u202eaway"}
    await relay.start()
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-node-here"))
    try:
        # (doctor runs its own event loop, so it runs in a thread while this loop serves)
        status = await asyncio.to_thread(main, ["doctor", "--socket", str(relay.path)])
        out = capsys.readouterr().out
        assert status == EXIT_OK, out
        assert out.splitlines()[0].startswith("[  ok] relay pi-buildbox.sock: Pi fake (pid ")
        assert "node" not in out  # nothing about this machine's node or Pi
        assert "\u202e" not in out
        assert "/far\\u202eaway" in out
        status = await asyncio.to_thread(main, ["doctor", "--json", "--socket", str(relay.path)])
        report = json.loads(capsys.readouterr().out)
        assert status == EXIT_OK
        assert report["socket"] == str(relay.path)
        assert [check["status"] for check in report["checks"]] == ["ok"]
    finally:
        await relay.stop()


@pytest.mark.asyncio
async def test_plain_doctor_checks_the_relays_forwarded_into_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SSH recipe forwards a remote relay into the relay directory as pi-<label>.sock;
    plain ``pi-ask doctor`` checks it (it said the directory was empty), and one whose ssh has
    exited is a warning that names the likely cause (clients skip it)."""
    directory = tmp_path / "relays"
    relay = FakeRelay(directory, name="pi-buildbox.sock")
    await relay.start()
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(directory))
    try:
        await asyncio.to_thread(main, ["doctor"])
        out = capsys.readouterr().out
        assert "[  ok] relay pi-buildbox.sock: Pi fake (pid " in out, out
        assert "is empty" not in out
    finally:
        await relay.stop()
    gone = socket.socket(socket.AF_UNIX)  # a socket file nothing listens on any more
    gone.bind(str(directory / "pi-oldbox.sock"))
    gone.close()
    os.chmod(directory / "pi-oldbox.sock", 0o600)
    await asyncio.to_thread(main, ["doctor"])
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if "pi-oldbox.sock" in line]
    assert line.startswith("[warn] relay pi-oldbox.sock: "), line
    assert "is its ssh -L still running?" in line


def test_doctor_socket_that_is_missing_or_unsafe_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--socket", str(tmp_path / "pi-gone.sock")]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert out.startswith("[fail] relay pi-gone.sock:")
    tmp_path.chmod(0o755)
    not_a_socket = tmp_path / "pi-file.sock"
    not_a_socket.write_text("")
    assert main(["doctor", "--socket", str(not_a_socket)]) == EXIT_FAILED
    assert "[fail] relay pi-file.sock: Refusing relay path" in capsys.readouterr().out


def test_try_refuses_an_invalid_form_before_starting_pi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No Pi in this cache: had `try` gone on to start Pi, it would install or fail there.
    monkeypatch.setenv("PI_ASK_PI_CACHE", str(tmp_path / "empty-cache"))
    form = tmp_path / "form.json"
    form.write_text(
        json.dumps(
            {
                "title": "bad\u202e",
                "questions": [
                    {"id": "a", "prompt": "A?", "options": []},
                    {"id": "a", "prompt": "Again?", "options": [{"value": "x\x1b[2J"}]},
                ],
            }
        ),
        encoding="utf-8",
    )
    assert main(["try", "--form", str(form)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "at least one option is required" in captured.err
    assert 'duplicate question id "a"' in captured.err
    assert not (tmp_path / "empty-cache").exists()
    form.write_text('{"questions": "none"}', encoding="utf-8")
    assert main(["try", "--form", str(form)]) == EXIT_USAGE
    assert "Malformed ask_user input" in capsys.readouterr().err
    assert not (tmp_path / "empty-cache").exists()


@pytest.mark.parametrize("explicit", [True, False])
def test_watch_names_the_directory_it_watches(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    explicit: bool,
) -> None:
    """Issue 27: it said "the default relay directory" even with PI_ASK_RELAY_DIR set."""
    relays = tmp_path / "relays"
    if explicit:
        monkeypatch.setenv("PI_ASK_RELAY_DIR", str(relays))
    else:
        monkeypatch.delenv("PI_ASK_RELAY_DIR", raising=False)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        relays = tmp_path / "pi-ask"
    assert main(["watch", "--duration", "0.05"]) == EXIT_OK
    first = capsys.readouterr().out.splitlines()[0]
    how = "PI_ASK_RELAY_DIR" if explicit else "the default relay directory"
    assert first == f"watching relays in {relays} ({how}; Ctrl-C stops)"


def test_try_help_says_where_pi_goes_its_size_and_pi_ask_pi_cache(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: a first ``pi-ask try`` downloads Pi; its help said neither where nor how much."""
    from pi_ask_sdk.testing.realpi import default_cache_dir

    assert main(["try", "--help"]) == EXIT_OK
    text = " ".join(capsys.readouterr().out.split())  # (as wrapped lines read)
    assert "about 380 MB" in text  # du -sh of an install of Pi 1.6.0 with its node 22: 377M
    assert "about 220 MB" in text  # Pi 0.74.2 (legacy; the machine's node): 219M
    assert "PI_ASK_PI_CACHE" in text
    assert "$XDG_CACHE_HOME/pi-ask-sdk/pi" in text
    assert "~/.cache/pi-ask-sdk/pi" in text
    assert "<cache>/node " in text
    assert "<cache>/node-legacy" in text
    assert "npm" in text
    # what the help says is what the code does
    monkeypatch.delenv("PI_ASK_PI_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == Path.home() / ".cache" / "pi-ask-sdk" / "pi"
    monkeypatch.setenv("XDG_CACHE_HOME", "/x")
    assert default_cache_dir() == Path("/x/pi-ask-sdk/pi")
    monkeypatch.setenv("PI_ASK_PI_CACHE", "/y")
    assert default_cache_dir() == Path("/y")


def test_try_says_in_words_what_failed() -> None:
    """Issue 27: ``try`` printed a failed call as the raw tool-result JSON. (The tool error of
    a real Pi: tests/integration/test_try_papercuts.py::test_a_failed_call_is_said_in_words.)"""
    from pi_ask_sdk.cli.trying import describe_failure

    refused = {
        "type": "tool_execution_end",
        "toolCallId": "try-1",
        "isError": False,
        "result": {
            "content": [{"type": "text", "text": "Invalid ask_user payload"}],
            "details": {
                "cancelled": True,
                "mode": "submit",
                "questions": [],
                "answers": {},
                "error": {
                    "kind": "invalid_input",
                    "issues": [
                        {"path": "questions[0].options", "message": "at least one option\x1b[2J"},
                        {"path": "questions[1].id", "message": 'duplicate question id "a"'},
                    ],
                },
            },
        },
    }
    assert describe_failure(refused) == (  # type: ignore[arg-type]
        "the host refused the form (Pi's agent got its invalid-input result):\n"
        "- questions[0].options: at least one option\\u001b[2J\n"
        '- questions[1].id: duplicate question id "a"'
    )
    failed = {"isError": True, "result": {"content": [{"type": "text", "text": "boom"}]}}
    assert describe_failure(failed) == (  # type: ignore[arg-type]
        "the ask_user call failed (Pi's agent got a tool error): boom"
    )
    assert describe_failure({"isError": True}) == (
        "the ask_user call failed (Pi's agent got a tool error): (no text)"
    )
    bare = {"result": {"content": [{"type": "text", "text": "odd"}]}}
    assert describe_failure(bare) == (  # type: ignore[arg-type]
        "the ask_user call returned no result details; Pi's agent read: odd"
    )
    answered = {"result": {"content": [], "details": {"cancelled": False, "answers": {}}}}
    assert describe_failure(answered) is None  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_answer_help_and_docs_quote_its_prompts_in_the_order_it_asks_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27: scripted input must stay in step with the prompts, so ``pi-ask answer
    --help`` and docs/relay.md quote them, exactly and in order, and say what becomes of the
    forms it leaves in the TUI and headless."""
    from pi_ask_sdk import BridgeClient
    from pi_ask_sdk.cli.console import answer_forms
    from pi_ask_sdk.testing import AskParams, FakeHost

    form: AskParams = {
        "title": "Plan",
        "questions": [
            {"id": "deploy", "prompt": "Deploy?", "options": [{"value": "yes"}, {"value": "no"}]},
            {
                "id": "regions",
                "type": "multi",
                "prompt": "Where?",
                "options": [{"value": "eu"}, {"value": "us"}],
            },
        ],
    }
    asked: list[str] = []
    lines = iter(["no", "", "eu,us", "a note", "s"])

    def prompt(text: str) -> str:
        asked.append(text)
        return next(lines)

    fake = FakeHost()
    async with BridgeClient(fake.transport()) as client:
        handle = fake.open(form, tool_call_id="plan")
        accepted = await answer_forms(client, prompt, lambda _: None, limit=1, timeout=5)
    assert accepted == 1
    assert handle.result is not None
    assert handle.result.answers["regions"].values == ["eu", "us"]
    single = "  ID> choose a number or a value; +text for custom text; Enter to skip: "
    multi = (
        "  ID> choose numbers or values, comma-separated; +text for custom text; Enter to skip: "
    )
    note = "  ID> note (Enter for none): "
    final = "Submit (s), ask the agent to clarify first (e), or cancel (c)? "
    assert asked == [
        single.replace("ID", "deploy"),
        note.replace("ID", "deploy"),
        multi.replace("ID", "regions"),
        note.replace("ID", "regions"),
        final,
    ]
    assert main(["answer", "--help"]) == EXIT_OK
    helped = capsys.readouterr().out
    docs = (Path(__file__).resolve().parents[2] / "docs" / "relay.md").read_text()
    for text, quoted in ((helped, "'{}'"), (docs, "`{}`")):
        places = [text.index(quoted.format(each)) for each in (single, multi, note, final)]
        assert places == sorted(places)
    for text in (" ".join(helped.split()), " ".join(docs.split())):
        assert "In Pi's TUI they stay open" in text or "**Pi's TUI**: they stay open" in text
        assert "PI_ASK_RELAY_GRACE_MS" in text
        assert "tool error" in text
    assert "stay open in Pi;" not in helped  # (said for every mode before)
