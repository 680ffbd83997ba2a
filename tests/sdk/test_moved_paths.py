"""The old import paths of the test tooling still work for one release, each with a
``DeprecationWarning`` naming the new path, and the pytest plugin is never registered twice;
``DecodedJsonTransport`` (the second submit path, removed) still resolves with a warning.

Each check runs in a fresh interpreter: a shim warns when it is first imported, and this process
may have imported it already.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pi_ask_core import LocalEventBus, SubmitEvent
from pi_ask_sdk import BridgeClient, Cancel, SubmitAccepted
from pi_ask_sdk.testing import FakeHost, yes_no_params
from pi_ask_sdk.transports.memory import MemoryTransport

from .conftest import TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}

IMPORT_OLD = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as seen:
        import {old} as old
    import {new} as new
    assert [w.category for w in seen] == [DeprecationWarning], [str(w.message) for w in seen]
    message = str(seen[0].message)
    assert "{old} is deprecated" in message and "import {new} instead" in message, message
    assert seen[0].filename == __file__, seen[0].filename  # the importing line, not importlib
    names = list(new.__all__)
    assert names and list(old.__all__) == names
    assert all(getattr(old, name) is getattr(new, name) for name in names)
    with warnings.catch_warnings(record=True) as again:
        import {old}
    assert again == [], "warns once"
    """
)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("pi_ask_sdk.standin", "pi_ask_sdk.testing.standin"),
        ("pi_ask_sdk.realpi", "pi_ask_sdk.testing.realpi"),
    ],
)
def test_an_old_module_path_resolves_with_a_warning(tmp_path: Path, old: str, new: str) -> None:
    script = tmp_path / "old_path.py"
    script.write_text(IMPORT_OLD.format(old=old, new=new))
    done = subprocess.run(
        [sys.executable, str(script)], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


PLUGIN_TEST = textwrap.dedent(
    """
    def test_the_fixtures_are_there(pi_ask_host, pi_ask_order):
        assert pi_ask_host.order == pi_ask_order == "completed_first"
    """
)


def run_pytest(
    directory: Path, env: dict[str, str], *options: str
) -> subprocess.CompletedProcess[str]:
    """pytest, in a process of its own, on the tests of ``directory``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("named_by", ["conftest", "-p"])
@pytest.mark.parametrize("autoload", [True, False])
def test_naming_the_old_plugin_path_gets_the_plugin_once(
    tmp_path: Path, autoload: bool, named_by: str
) -> None:
    option: list[str] = []
    if named_by == "conftest":
        (tmp_path / "conftest.py").write_text('pytest_plugins = ["pi_ask_sdk.pytest_plugin"]\n')
    else:
        option = ["-p", "pi_ask_sdk.pytest_plugin"]
    (tmp_path / "test_bridge.py").write_text(PLUGIN_TEST)
    env = dict(ENV)
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only the conftest names the plugin
    else:
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    done = run_pytest(tmp_path, env, "-W", "always", "-rw", *option)
    # registered twice, pytest would refuse the second registration or its options
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "pi_ask_sdk.pytest_plugin is deprecated" in done.stdout
    assert "import pi_ask_sdk.testing.pytest_plugin instead" in done.stdout


def test_the_old_plugin_path_respects_no_pi_ask(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["pi_ask_sdk.pytest_plugin"]\n')
    (tmp_path / "test_bridge.py").write_text(PLUGIN_TEST)
    env = {**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = run_pytest(tmp_path, env, "-p", "no:pi_ask")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fixture 'pi_ask_host' not found" in done.stdout


@pytest.mark.parametrize("module", ["pi_ask_sdk.transports", "pi_ask_sdk.transports.base"])
def test_decoded_json_transport_still_resolves_with_a_warning(module: str) -> None:
    imported = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match="DecodedJsonTransport is deprecated") as seen:
        protocol = imported.DecodedJsonTransport
    assert [w.filename for w in seen] == [__file__]  # the caller's line
    assert "DecodedJsonTransport" not in imported.__all__

    class Decoding(MemoryTransport):
        async def send_decoded(self, payload: object, request_id: str, flow_id: str) -> None:
            raise AssertionError("the client no longer calls send_decoded")

    assert isinstance(Decoding(LocalEventBus()), protocol)


@pytest.mark.asyncio
async def test_the_client_sends_every_submit_through_send_even_with_send_decoded() -> None:
    host = FakeHost()
    sent: list[SubmitEvent] = []

    class Decoding(MemoryTransport):
        async def send(self, payload: SubmitEvent) -> None:
            sent.append(payload)
            await super().send(payload)

        async def send_decoded(self, payload: object, request_id: str, flow_id: str) -> None:
            raise AssertionError("the client no longer calls send_decoded")

    async with BridgeClient(Decoding(host.bus, host.host)) as client:
        host.open(yes_no_params(), tool_call_id="c1")
        flow = await client.flows().next(timeout=TIMEOUT)
        outcome = await client.respond(flow, Cancel.of(flow), timeout=TIMEOUT)
    assert isinstance(outcome, SubmitAccepted)
    assert [event.flow_id for event in sent] == ["tool:c1"]


def test_from_import_of_decoded_json_transport_warns_once_at_the_importing_line() -> None:
    with pytest.warns(DeprecationWarning, match="DecodedJsonTransport is deprecated") as seen:
        from pi_ask_sdk.transports import DecodedJsonTransport  # noqa: F401
    assert [w.filename for w in seen] == [__file__]


def test_an_unknown_transports_name_is_still_an_attribute_error() -> None:
    import pi_ask_sdk.transports.base as base

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        getattr(base, "Nope")  # noqa: B009
