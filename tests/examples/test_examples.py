"""Every example bridge, run against FakeHost (no Pi): what it sends is what its docs promise."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pi_ask_sdk.testing import AskParams, FakeHost
from tests.interrupts import default_sigint
from tests.relay.fake_relay import FakeRelay

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

RELEASE: AskParams = {
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [
                {"value": "yes", "label": "No way"},  # a label that lies: only values count
                {"value": "no", "label": "Yes"},
            ],
        },
        {
            "id": "run_tests",
            "prompt": "Run tests?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        },
        {
            "id": "notify",
            "prompt": "Notify?",
            "type": "multi",
            "options": [
                {"value": "oncall", "label": "On-call"},
                {"value": "team", "label": "Team"},
            ],
        },
    ]
}


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def policy() -> ModuleType:
    return load("policy_bridge")


@pytest.fixture(scope="module")
def console() -> ModuleType:
    return load("console_bridge")


@pytest.mark.asyncio
async def test_policy_bridge_answers_with_its_rule_values(policy: ModuleType) -> None:
    host = FakeHost()
    async with host.client() as client:
        handle = host.open(RELEASE, tool_call_id="call-1")
        [outcome] = await policy.serve(client, limit=1, timeout=5)
    assert outcome.kind == "accepted"
    result = handle.result
    assert result is not None
    assert not result.cancelled
    assert {q: a.values for q, a in result.answers.items()} == {
        "deploy": ["no"],
        "run_tests": ["yes"],
        "notify": ["oncall"],
    }
    assert result.answers["deploy"].labels == ["Yes"]  # the label of value "no": never read


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("form", "reason"),
    [
        (
            {
                "questions": [
                    {
                        "id": "format_disk",
                        "prompt": "Format?",
                        "options": [{"value": "yes", "label": "Yes"}],
                    }
                ]
            },
            'no rule for question "format_disk"',
        ),
        (
            {
                "questions": [
                    {
                        "id": "deploy",
                        "prompt": "Deploy?",
                        "options": [{"value": "ship", "label": "no"}],
                    }
                ]
            },
            "not options of this form",
        ),
    ],
)
async def test_policy_bridge_fails_closed_with_an_explicit_cancel(
    policy: ModuleType, form: AskParams, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    host = FakeHost()
    async with host.client() as client:
        handle = host.open(form, tool_call_id="call-2")
        [outcome] = await policy.serve(client, limit=1, timeout=5)
    assert outcome.kind == "accepted"
    assert outcome.ticket.response_kind == "cancel"
    assert handle.result is not None
    assert handle.result.cancelled
    assert reason in caplog.text
    [submit] = host.submits
    assert isinstance(submit, dict)
    assert submit["response"] == {"kind": "cancel"}


@pytest.mark.asyncio
async def test_console_bridge_sends_the_values_of_the_numbers_typed(console: ModuleType) -> None:
    host = FakeHost()
    typed = iter(["2", "1", "2,1"])
    shown: list[str] = []
    async with host.client() as client:
        handle = host.open(RELEASE, tool_call_id="call-3")
        accepted = await console.serve(client, lambda _: next(typed), shown.append, limit=1)
    assert accepted == 1
    assert handle.result is not None
    assert {q: a.values for q, a in handle.result.answers.items()} == {
        "deploy": ["no"],
        "run_tests": ["yes"],
        "notify": ["team", "oncall"],
    }
    assert any("Yes" in line for line in shown)


@pytest.mark.asyncio
async def test_console_bridge_cancels_only_when_asked(console: ModuleType) -> None:
    host = FakeHost()
    typed = iter(["9", "yes", "x"])  # out of range, a value typed as text, then cancel
    shown: list[str] = []
    async with host.client() as client:
        handle = host.open(RELEASE, tool_call_id="call-4")
        await console.serve(client, lambda _: next(typed), shown.append, limit=1)
    assert handle.result is not None
    assert handle.result.cancelled
    out_of_range = shown.index("  choose a number between 1 and 2")
    assert shown.index("  please type option numbers") == out_of_range + 1


def test_web_approval_page_maps_buttons_to_form_values_without_a_browser() -> None:
    """The page's logic (the browser test in tests/browser clicks the same in Chromium)."""
    web = load("web_approval")
    other_form: AskParams = {
        "questions": [
            {"id": "color", "prompt": "Colour?", "options": [{"value": "red", "label": "Approve"}]}
        ]
    }
    host = FakeHost()
    with host.sync_client() as client:
        deploy = host.open(RELEASE, tool_call_id="web")
        other = host.open(other_form, tool_call_id="other")
        page = web.ApprovalPage(client, timeout=5)
        page.server.server_close()  # not served: the handlers are called directly
        html = page.render()
        assert "No way (<code>yes</code>)" in html  # the label shown next to the value it sends
        assert "Not handled here" in html  # the other form: no button fits it
        page.press("tool:other", "Approve")  # a button that does not fit: nothing sent
        assert "was not sent" in page.status
        page.press("tool:web", "Reject")
        assert "accepted" in page.status
        page.press("tool:web", "Approve")  # gone now: nothing is sent twice
        assert "no longer open" in page.status
    assert deploy.result is not None
    assert deploy.result.answers["deploy"].values == ["no"]
    assert other.is_open
    assert len(host.submits) == 1


@pytest.mark.asyncio
async def test_console_bridge_ends_at_one_ctrl_c_with_130(tmp_path: Path) -> None:
    """A real SIGINT to the example running as a program, while it waits for the person: it
    ends at once (no second Ctrl-C, no thread left waiting for Enter), quietly, status 130."""
    relay = FakeRelay(tmp_path / "relays")
    await relay.start()
    handle = relay.open_form(RELEASE, tool_call_id="call-5")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / "console_bridge.py"),
        env={**os.environ, "PI_ASK_RELAY_DIR": str(relay.directory)},
        stdin=asyncio.subprocess.PIPE,  # open and silent: the person has not typed yet
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=default_sigint,  # Ctrl-C works in it even when this suite ignores SIGINT
    )
    try:
        assert proc.stdout is not None
        shown = b""
        while b"x to cancel): " not in shown:
            chunk = await asyncio.wait_for(proc.stdout.read(4096), 30)
            assert chunk, shown
            shown += chunk
        proc.send_signal(signal.SIGINT)
        status = await asyncio.wait_for(proc.wait(), 10)
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert status == 130, err
        assert err == ""
        assert handle.is_open  # nothing was sent: the form stays open in Pi
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await relay.stop()
