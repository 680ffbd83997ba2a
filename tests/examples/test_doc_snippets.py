"""Every Python snippet of the README and docs/ runs, as written, and does what its text says.

Each snippet is written out as a script and run in a subprocess of its own, as a reader who
copies it would. What a snippet only defines is then driven by a short tail appended to it (a
call with a FakeHost form, say); a snippet that connects to "the one running Pi" meets a
FakeRelay in a private relay directory (``PI_ASK_RELAY_DIR``) whose "Pi" is a helper process,
so ending that process ends the connection for good, as Pi exiting would. Snippets that are
tests run under pytest (the plugin's fixtures included). The two that need a real Pi run in
tests/integration/test_doc_snippets_real_pi.py; every other snippet must have a case here.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

from pi_ask_sdk.testing import AskParams
from tests.doc_snippets import doc_snippets
from tests.interrupts import default_sigint
from tests.relay.fake_relay import FakeRelay

SNIPPETS = doc_snippets()
REAL_PI = {"real-pi_2", "real-pi_3"}  # tests/integration/test_doc_snippets_real_pi.py
FLEET = {"fleet_1", "fleet_2"}  # tests/fleet/test_doc_snippets_fleet.py (nats-py, a server)
BOUND = 60.0

FORM: AskParams = {
    "title": "Release",
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        }
    ],
}
OTHER_FORM: AskParams = {
    "questions": [
        {"id": "colour", "prompt": "Colour?", "options": [{"value": "red", "label": "Red"}]}
    ]
}

# What a snippet that only defines things is driven with (appended to its code).
_FLOW = """
from pi_ask_sdk import FlowView
from pi_ask_sdk.testing import FakeHost

_FORM = {FORM!r}
_started = FakeHost().open(_FORM, tool_call_id="docs").started_event()
assert _started is not None
_flow = FlowView.from_started(_started)
"""
TAILS = {
    "bridges_1": "import asyncio\nasyncio.run(follow())",
    "bridges_2": _FLOW
    + """
print("\\n".join(lines(_flow.question("deploy"))))
""",
    "bridges_3": _FLOW
    + """
import msgspec
print(msgspec.to_builtins(hold(_flow).to_wire()))
print(msgspec.to_builtins(dismiss(_flow).to_wire()))
""",
    "bridges_4": _FLOW
    + """
import msgspec
from pi_ask_sdk import ApprovalMappingError

for _button in ("Approve", "Reject", "Dismiss"):
    print(_button, msgspec.to_builtins(press(_flow, _button).to_wire()))
try:
    press(_flow, "Launch")
except ApprovalMappingError as _error:
    print("refused:", _error)
""",
    "bridges_5": """
import asyncio
from pi_ask_sdk import AnswerBuilder
from pi_ask_sdk.testing import FakeHost

async def _drive() -> None:
    host = FakeHost()
    async with host.client() as client:
        host.open({FORM!r}, tool_call_id="docs")
        flow = await client.flows().next(timeout=5)
        deploy = flow.question("deploy")
        await send(client, flow, AnswerBuilder(flow).select(deploy, deploy.value("no")).build())

asyncio.run(_drive())
""",
    "bridges_6": _FLOW
    + """
import msgspec
from pi_ask_sdk import AnswerBuilder, to_json

_deploy = _flow.question("deploy")
_posted = to_json(AnswerBuilder(_flow).select(_deploy, _deploy.value("no")).build())
print(msgspec.to_builtins(round_trip(_flow, _posted).to_wire()))
""",
    # serve_every_pi runs until cancelled: cancelled here once the test closes stdin
    "relay_2": """
import asyncio, contextlib, sys

async def _drive() -> None:
    task = asyncio.create_task(main())
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

asyncio.run(_drive())
""",
}


@dataclass
class Run:
    proc: asyncio.subprocess.Process
    out: str = ""
    lines: list[str] = field(default_factory=list)

    async def wait_for(self, text: str) -> None:
        assert self.proc.stdout is not None
        while text not in self.out:
            line = await asyncio.wait_for(self.proc.stdout.readline(), BOUND)
            assert line, f"{text!r} never printed; stdout:\n{self.out}"
            self.out += line.decode()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    async def finish(self) -> tuple[int, str, str]:
        self.close_stdin()
        out, err = await asyncio.wait_for(self.proc.communicate(), BOUND)
        assert self.proc.returncode is not None
        return self.proc.returncode, self.out + out.decode(), err.decode()


async def start(
    tmp_path: Path, name: str, *, env: dict[str, str] | None = None, pytest_run: bool = False
) -> Run:
    code = SNIPPETS[name] + textwrap.dedent(TAILS.get(name, "")).replace("{FORM!r}", repr(FORM))
    script = tmp_path / ("test_snippet.py" if pytest_run else "snippet.py")
    script.write_text(code, encoding="utf-8")
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)] if pytest_run else []
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *(args or [str(script)]),
        cwd=tmp_path,
        # (unbuffered: each line shows when printed, as on a terminal)
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        stdin=asyncio.subprocess.PIPE,  # closed by finish(), or earlier by a test
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=default_sigint,  # Ctrl-C works in it even when this suite ignores SIGINT
    )
    return Run(proc)


@dataclass
class FakePi:
    """A FakeRelay whose pid is a live helper process: ``exit()`` is Pi exiting."""

    relay: FakeRelay
    helper: asyncio.subprocess.Process

    @property
    def env(self) -> dict[str, str]:
        return {"PI_ASK_RELAY_DIR": str(self.relay.directory)}

    async def exit(self) -> None:
        if self.helper.returncode is None:
            self.helper.kill()
            await self.helper.wait()  # reaped: no zombie looks alive
        await self.relay.stop()


@pytest_asyncio.fixture
async def fake_pi(tmp_path: Path) -> AsyncIterator[FakePi]:
    helper = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.stdin.read()", stdin=asyncio.subprocess.PIPE
    )
    pi = FakePi(FakeRelay(tmp_path / "relays", pid=helper.pid), helper)
    await pi.relay.start()
    try:
        yield pi
    finally:
        await pi.exit()


def test_every_snippet_has_a_case() -> None:
    cases = {*TAILS, *PLAIN, *RELAY, *TESTS, "bridges_7", "real-pi_1", "relay_1"}
    assert set(SNIPPETS) == cases | REAL_PI | FLEET
    assert not cases & (REAL_PI | FLEET)


# Snippets that run as they are and print what is expected.
PLAIN = {
    "README_1": ["answered ['no']"],
    "PYPI_1": ["answered ['no']"],
    "bridges_2": ["Deploy?", "1. Yes [yes]", "2. No [no]"],
    "bridges_3": ["'values': ['no']", "'note': 'after the freeze'", "{'kind': 'cancel'}"],
    "bridges_4": [
        "Approve {'kind': 'answer'",
        "'values': ['yes']",
        "Reject {'kind': 'answer'",
        "Dismiss {'kind': 'cancel'}",
        "refused:",
    ],
    "bridges_5": ["answers"],
    "bridges_6": ["'values': ['no']"],
}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(PLAIN))
async def test_snippet_runs_and_prints(tmp_path: Path, name: str) -> None:
    status, out, err = await (await start(tmp_path, name)).finish()
    assert status == 0, err
    for expected in PLAIN[name]:
        assert expected in out, out


TESTS = {"bridges_8", "bridges_9"}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(TESTS))
async def test_snippet_test_passes_under_pytest(tmp_path: Path, name: str) -> None:
    status, out, err = await (await start(tmp_path, name, pytest_run=True)).finish()
    assert status == 0, out + err
    assert "1 passed" in out
    assert "skipped" not in out


# Snippets that connect to the one running Pi: (what they print for the form, whether the
# driver's cancel ends them rather than Pi exiting)
RELAY = {
    "bridges_1": ("tool:docs Release", False),
    "relay_2": (" tool:docs", True),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(RELAY))
async def test_snippet_follows_the_running_pi(tmp_path: Path, fake_pi: FakePi, name: str) -> None:
    expected, until_cancelled = RELAY[name]
    fake_pi.relay.open_form(FORM, tool_call_id="docs")
    run = await start(tmp_path, name, env=fake_pi.env)
    await run.wait_for(expected)
    if until_cancelled:
        run.close_stdin()
    else:
        await fake_pi.exit()  # the stream of forms ends with the connection
    status, out, err = await run.finish()
    assert status == 0, err
    assert err == ""
    if name == "relay_2":
        assert f"{fake_pi.helper.pid} tool:docs" in out


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["relay_1", "bridges_7"])
async def test_snippet_answers_the_running_pi_with_a_value(
    tmp_path: Path, fake_pi: FakePi, name: str
) -> None:
    """relay.md's bridge and bridges.md's sync bridge: the deploy form is answered "no", a form
    without a deploy question is left alone; they end when Pi exits."""
    deploy = fake_pi.relay.open_form(FORM, tool_call_id="docs")
    other = fake_pi.relay.open_form(OTHER_FORM, tool_call_id="other")
    run = await start(tmp_path, name, env=fake_pi.env)
    await run.wait_for("accepted")
    assert deploy.result is not None
    assert deploy.result.answers["deploy"].values == ["no"]
    assert other.is_open
    await fake_pi.exit()
    status, out, err = await run.finish()
    assert status == 0, err
    assert "tool:other" not in out


@pytest.mark.asyncio
async def test_standin_server_snippet_serves_until_ctrl_c(tmp_path: Path) -> None:
    run = await start(tmp_path, "real-pi_1", env={"RUN": "1"})
    try:
        await run.wait_for("export PI_ASK_STANDIN_SOCKET=")
        await run.wait_for('pi -e "$(pi-ask relay-path)" -e "$(pi-ask standin-path)"')
        path = Path(run.out.split("export PI_ASK_STANDIN_SOCKET=", 1)[1].split("\n", 1)[0])
        assert path.is_socket()
        run.proc.send_signal(signal.SIGINT)
        status, _, err = await run.finish()
    finally:
        await run.kill()  # (a no-op once it ended: nothing is left running)
    assert status == 0, err
    assert err == ""
    assert not path.exists()


def test_without_run_the_standin_snippet_only_defines(tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(SNIPPETS["real-pi_1"], encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "RUN"}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=BOUND
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
