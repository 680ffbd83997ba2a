"""pi-ask behaves like a conventional command: --version, help with examples and exit codes,
distinct exit statuses, and the guides it ships."""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import pi_ask_sdk
from pi_ask_sdk.cli import main
from pi_ask_sdk.cli.usage import EXIT_FAILED, EXIT_RUNTIME, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "demo",
    "schema",
    "relay-path",
    "docs",
    "watch",
    "answer",
    "doctor",
    "standin-path",
    "try",
    "forward",
]


def test_the_list_above_is_every_command_and_the_module_names_them_all() -> None:
    from pi_ask_sdk import cli

    [subparsers] = [
        action
        for action in cli._parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    assert sorted(subparsers.choices) == sorted(COMMANDS)
    doc = cli.__doc__ or ""
    named = re.findall(r"``([a-z-]+)``", doc.split("\n\n", 1)[0].split(":", 1)[1])
    assert sorted(named) == sorted(COMMANDS)
    assert "ten subcommands" in doc
    assert len(COMMANDS) == 10


def test_version_names_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    for spelling in ("--version", "-V"):
        assert main([spelling]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"pi-ask {pi_ask_sdk.__version__} (pi-ask-sdk; relay protocol 1;")
    assert metadata.version("pi-ask-sdk") == pi_ask_sdk.__version__


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_examples_and_the_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    # A description of its own between the usage and the options.
    description = out.split("\n\n", 2)[1]
    assert not description.startswith(("options:", "positional arguments:")), out
    assert len(description.split()) >= 8, description
    # the *-path commands' first example is the Pi command line that loads what they print
    first = {
        "relay-path": 'pi -e "$(pi-ask relay-path)"',
        "standin-path": 'pi -e "$(pi-ask relay-path)" -e "$(pi-ask standin-path)"',
    }.get(command, f"pi-ask {command}")
    assert f"examples:\n  {first}" in out
    assert "exit status:" in out
    for code in ("0 ", "1 ", "2 ", "3 ", "130 "):
        assert f"\n  {code}" in out


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert re.search(rf"^    {re.escape(command)}\s", out, flags=re.M), command


def test_a_usage_error_is_2_and_says_what_is_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["answer", "--count", "many"]) == EXIT_USAGE
    assert "argument --count: must be a whole number above 0, not 'many'" in capsys.readouterr().err
    assert main(["answer", "--count", "0"]) == EXIT_USAGE
    assert main(["watch", "--duration", "nan"]) == EXIT_USAGE
    assert "must be a number above 0" in capsys.readouterr().err
    assert main(["answer", "--pid", "1", "--socket", "/x"]) == EXIT_USAGE
    assert main(["no-such-command"]) == EXIT_USAGE


def test_a_runtime_error_is_3_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(tmp_path / "none"))
    assert main(["answer"]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.startswith("pi-ask answer: No running Pi with the pi-ask relay found in ")
    assert "Traceback" not in err


def test_demo_statuses_distinguish_nothing_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_ask_sdk.cli", "demo", "--interactive"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_FAILED, done.stderr
    assert "end of input: nothing sent" in done.stdout
    assert "Traceback" not in done.stderr


def test_docs_lists_and_prints_the_guides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs"]) == 0
    listing = capsys.readouterr().out.split()
    guides = {path.stem for path in (ROOT / "docs").glob("*.md")}
    assert guides == {"bridges", "relay", "real-pi", "protocol-decisions", "fleet"}
    assert guides <= set(listing)
    assert main(["docs", "--help"]) == 0
    helped = capsys.readouterr().out
    assert all(guide in helped for guide in guides)  # the help names every guide
    assert main(["docs", "relay"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "relay.md").read_text(encoding="utf-8")
    assert main(["docs", "nope\x1b[2J"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert 'no guide "nope\\u001b[2J"' in err
    assert "\x1b" not in err


def test_a_closed_pipe_ends_the_command_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pi-ask schema | head -1``: no traceback, no error message, status 0."""

    class ClosedPipe(io.TextIOWrapper):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    with (tmp_path / "out").open("wb") as raw:
        monkeypatch.setattr(sys, "stdout", ClosedPipe(raw))
        assert main(["schema"]) == 0
        os.write(raw.fileno(), b"after")  # now /dev/null: the final flush cannot fail
    assert (tmp_path / "out").read_bytes() == b""
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["watch", "--creds", "x.creds"],
        ["doctor", "--tls-ca", "ca.pem"],
        ["doctor", "--listen", "2"],
        ["doctor", "--nats", "nats://127.0.0.1:4222", "--socket", "/tmp/pi-1.sock"],
    ],
)
def test_fleet_options_without_nats_or_with_socket_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"pi-ask {argv[0]}: ")
    assert "--nats" in err
