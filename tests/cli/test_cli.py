"""The pi-ask command: demo (plain, --json, --interactive), schema, relay-path."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_ask_core import CHANNELS
from pi_ask_sdk.cli import main
from pi_ask_sdk.cli.console import parse_choice
from pi_ask_sdk.cli.demo import DEMO_FORM, run_demo
from pi_ask_sdk.forms import FlowId, QuestionView
from pi_ask_sdk.testing import FakeHost


def test_demo_shows_form_submit_acknowledgement_and_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for expected in (
        'started tool:call-demo-1 "Release 2.4.0"',
        "Deploy now (recommended)",
        "refused locally, nothing sent",
        'deploy: values ["window"]',
        ": accepted",
        "completed tool:call-demo-1",
        "Wait for the maintenance window (window, #2)",
    ):
        assert expected in out
    assert out.index("started") < out.index("submit demo-") < out.index(": accepted")
    assert out.index(": accepted") < out.index("completed")


def test_demo_json_prints_every_raw_event(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["channel"] for line in lines] == [
        "pi-agent-ask:started",
        "pi-agent-ask:submit",
        "pi-agent-ask:completed",  # the reference order: completed before its submit-result
        "pi-agent-ask:submit-result",
    ]
    started, submit = lines[0]["data"], lines[1]["data"]
    assert started["flowId"] == "tool:call-demo-1"
    assert submit["response"]["answers"]["deploy"] == {
        "values": ["window"],
        "note": "Deploy after the traffic peak.",
    }
    assert lines[-1]["data"]["ok"] is True


def test_demo_interactive_sends_what_the_person_chose() -> None:
    typed = iter(["Deploy now", "3", "", "1,+and the CTO", "", "offline", "", "s"])
    shown: list[str] = []
    status = asyncio.run(
        run_demo(interactive=True, prompt=lambda _: next(typed), write=shown.append)
    )
    assert status == 0
    text = "\n".join(shown)
    assert '"Deploy now" is a label' in text  # refused, asked again
    assert "deploy: Do not deploy (no, #3)" in text
    assert 'custom text "and the CTO"' in text
    assert "migration: Offline (offline, #2)" in text


def test_demo_interactive_cancel_is_explicit() -> None:
    typed = iter(["!cancel"])
    shown: list[str] = []
    assert (
        asyncio.run(run_demo(interactive=True, prompt=lambda _: next(typed), write=shown.append))
        == 0
    )
    assert shown[-3].endswith("\n  cancel (explicit)")
    assert shown[-2].endswith(": accepted")
    assert shown[-1] == "completed tool:call-demo-1\n  result: cancelled\n    (no answers)"


def test_parse_choice_takes_numbers_and_values_never_labels() -> None:
    host = FakeHost()
    handle = host.host.start(DEMO_FORM, tool_call_id="c")
    question = QuestionView.from_wire(handle.questions[1], FlowId(handle.flow_id))  # notify, multi
    assert parse_choice(question, "1, status-page,+ops") == (["oncall", "status-page"], "ops")
    with pytest.raises(ValueError, match="is a label"):
        parse_choice(question, "On-call engineer")
    with pytest.raises(ValueError, match="neither"):
        parse_choice(question, "4")


def test_schema_prints_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert set(schema["properties"]) == set(CHANNELS)


def test_relay_path_is_the_shipped_extension(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["relay-path"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.is_absolute()
    assert path.name == "pi-ask-relay.ts"
    assert "export default function" in path.read_text(encoding="utf-8")


def test_console_script_entry_point_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pi_ask_sdk.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "completed tool:call-demo-1" in done.stdout
