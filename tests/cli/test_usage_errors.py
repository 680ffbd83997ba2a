"""Usage errors (issue 27): every subcommand words them one way and exits 2.

The one format: ``pi-ask COMMAND: usage error: WHAT`` and a second line pointing at
``pi-ask COMMAND --help``, on stderr, with nothing on stdout; a bad number is worded the same
for every flag that takes one, and a ``--form`` that is not JSON names its file, line and column.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_ask_sdk.cli import main
from pi_ask_sdk.cli.usage import EXIT_USAGE
from tests.cli.test_conventions import COMMANDS


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What ``pi-ask ARGV`` says for its usage error (asserting the one format)."""
    assert main(list(argv)) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    prog = "pi-ask" if not argv or argv[0].startswith("-") else f"pi-ask {argv[0]}"
    if prog != "pi-ask" and argv[0] not in COMMANDS:
        prog = "pi-ask"
    first, hint, end = captured.err.split("\n")
    assert first.startswith(f"{prog}: usage error: "), captured.err
    assert hint == f"(`{prog} --help` shows its usage)", captured.err
    assert end == ""
    return first.removeprefix(f"{prog}: usage error: ")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_flag_is_the_commands_own_usage_error(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert usage_error(capsys, command, "--bogus") == "unrecognized arguments: --bogus"


def test_top_level_usage_errors_have_the_same_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid choice: 'no-such-command'" in usage_error(capsys, "no-such-command")
    assert usage_error(capsys) == "the following arguments are required: COMMAND"


@pytest.mark.parametrize("argv", [["--frob"], ["--frob", "demo"], ["--frob", "-x", "schema"]])
def test_an_unknown_flag_of_pi_ask_itself_is_named(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, ``pi-ask --frob`` only said a COMMAND was required (not which flag was bad)."""
    flags = " ".join(word for word in argv if word.startswith("-"))
    assert usage_error(capsys, *argv) == f"unrecognized arguments: {flags}"


def test_pi_ask_frob_names_the_flag_exits_2_and_points_at_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_ask_sdk.cli", "--frob"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_USAGE == 2
    assert done.stdout == ""
    assert done.stderr == (
        "pi-ask: usage error: unrecognized arguments: --frob\n(`pi-ask --help` shows its usage)\n"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["answer", "--pid", "-5"], "argument --pid: must be a whole number above 0, not '-5'"),
        (["answer", "--pid", "0"], "argument --pid: must be a whole number above 0, not '0'"),
        (["answer", "--pid", "x"], "argument --pid: must be a whole number above 0, not 'x'"),
        (
            ["answer", "--pid", "2147483648"],
            "argument --pid: must be a whole number from 1 to 2147483647, not '2147483648'",
        ),
        (
            ["answer", "--pid", "9" * 30],
            f"argument --pid: must be a whole number from 1 to 2147483647, not '{'9' * 30}'",
        ),
        (["answer", "--count", "0"], "argument --count: must be a whole number above 0, not '0'"),
        (
            ["answer", "--count", "1.5"],
            "argument --count: must be a whole number above 0, not '1.5'",
        ),
        (["try", "--count", "0"], "argument --count: must be a whole number above 0, not '0'"),
        (["try", "--count", "-1"], "argument --count: must be a whole number above 0, not '-1'"),
        (["watch", "--duration", "0"], "argument --duration: must be a number above 0, not '0'"),
        (
            ["watch", "--duration", "nan"],
            "argument --duration: must be a number above 0, not 'nan'",
        ),
    ],
)
def test_a_bad_number_is_worded_one_way_for_every_flag(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert usage_error(capsys, *argv) == expected


def test_other_usage_errors_share_the_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert usage_error(capsys, "answer", "--pid", "1", "--socket", "/x") == (
        "argument --socket: not allowed with argument --pid"
    )
    assert "invalid choice: 'newest'" in usage_error(capsys, "try", "--flavour", "newest")
    assert usage_error(capsys, "docs", "nope").startswith('no guide "nope"; one of: ')
    missing = tmp_path / "missing.json"
    assert usage_error(capsys, "try", "--form", str(missing)) == (
        f"cannot read the form {missing}: No such file or directory"
    )
    assert usage_error(capsys, "try", "--host", str(tmp_path / "nohost")) == (
        f"no such host extension: {tmp_path / 'nohost'}"
    )


def test_a_form_that_is_not_json_names_the_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    form = tmp_path / "my-form.json"
    form.write_text('{"title": "T",\n "questions": }\n', encoding="utf-8")
    assert usage_error(capsys, "try", "--form", str(form)) == (
        f"the form {form} is not JSON: line 2, column 15: Expecting value"
    )
    form.write_text("[1, 2]", encoding="utf-8")
    assert usage_error(capsys, "try", "--form", str(form)) == (
        f"the form {form} is not a JSON object (ask_user input is one)"
    )
    form.write_bytes(b'{"title": "\xff"}')
    assert usage_error(capsys, "try", "--form", str(form)).startswith(
        f"the form {form} is not UTF-8: "
    )


def test_a_form_on_stdin_that_is_not_json_is_named_stdin() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_ask_sdk.cli", "try", "--form", "-"],
        input="{\n\n  oops",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        "pi-ask try: usage error: the form on stdin is not JSON: line 3, column 3: "
        "Expecting property name enclosed in double quotes\n"
        "(`pi-ask try --help` shows its usage)\n"
    )


def test_an_invalid_form_is_a_usage_error_of_the_same_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_ASK_PI_CACHE", str(tmp_path / "empty-cache"))
    form = tmp_path / "form.json"
    form.write_text(json.dumps({"questions": "none"}), encoding="utf-8")
    assert main(["try", "--form", str(form)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"pi-ask try: usage error: the form {form} is invalid: ")
    assert err.endswith("\n(`pi-ask try --help` shows its usage)\n")
    assert not (tmp_path / "empty-cache").exists()


def closed(redirect: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``pi-ask ARGV`` started with a standard stream closed (``<&-`` or ``>&-``)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -m pi_ask_sdk.cli "$@" {redirect}', sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_form_on_a_closed_stdin_is_a_usage_error() -> None:
    done = closed("<&-", "try", "--form", "-")
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr == (
        "pi-ask try: usage error: the form on stdin is not JSON: line 1, column 1: "
        "Expecting value\n"
        "(`pi-ask try --help` shows its usage)\n"
    )


@pytest.mark.parametrize("command", [["relay-path"], ["demo"], ["schema"]])
def test_a_closed_stdout_is_no_traceback(command: list[str]) -> None:
    done = closed(">&-", *command)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
