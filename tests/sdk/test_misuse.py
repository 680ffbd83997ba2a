"""Misuse raises errors of the one tree, each also the exception Python code expects for it: a
bad argument is an ``InvalidArgument`` (a ``TypeError`` and a ``ValueError``), a call the state
forbids an ``InvalidUse`` (a ``RuntimeError``). No library module raises a bare builtin."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from pi_ask_core import LocalEventBus, PiAskError
from pi_ask_sdk import (
    Answer,
    AnyFlow,
    BridgeClient,
    ClientNotOpen,
    FlowId,
    InvalidArgument,
    OptionValue,
    QuestionId,
    SyncBridgeClient,
)
from pi_ask_sdk.errors import InvalidUse
from pi_ask_sdk.forms import DisplayText
from pi_ask_sdk.outcomes import SubmitNotSent
from pi_ask_sdk.testing import FakeHost, ScriptedTransport
from pi_ask_sdk.transports import EndReason, MemoryTransport, TransportListener
from pi_ask_sdk.transports.relay import RelayTransport

from .conftest import TIMEOUT

ROOT = Path(__file__).resolve().parents[2]


def _subclass_option_value() -> None:
    type("Mine", (OptionValue,), {})


def _truth_of_an_outcome() -> None:
    bool(SubmitNotSent(FlowId("tool:c1"), "closed"))


def _memory_client(**options: object) -> BridgeClient:
    return BridgeClient(MemoryTransport(LocalEventBus()), **options)  # type: ignore[arg-type]


def _observer_with_a_factory() -> object:
    return BridgeClient.connect(lambda: MemoryTransport(LocalEventBus()), observer=True)


ARGUMENTS: list[tuple[str, Callable[[], object]]] = [
    (
        "empty request id prefix",
        lambda: BridgeClient(MemoryTransport(LocalEventBus()), request_id_prefix=""),
    ),
    (
        "completed memory 0",
        lambda: BridgeClient(MemoryTransport(LocalEventBus()), completed_memory=0),
    ),
    (
        "observer with a factory",
        lambda: BridgeClient.connect(lambda: MemoryTransport(LocalEventBus()), observer=True),
    ),
    ("unknown relay role", lambda: RelayTransport(role="x")),  # type: ignore[arg-type]
    ("a made-up QuestionId", lambda: QuestionId("deploy")),  # type: ignore[abstract]
    ("a made-up OptionValue", lambda: OptionValue("yes")),  # type: ignore[abstract]
    ("a made-up DisplayText", lambda: DisplayText("Yes")),  # type: ignore[abstract]
    ("AnyFlow as a value", AnyFlow),
    ("an Answer not built", lambda: Answer(FlowId("tool:c1"), ())),  # type: ignore[abstract]
    ("a subclass of OptionValue", _subclass_option_value),
    ("an outcome tested for truth", _truth_of_an_outcome),
    ("FakeHost.flow of no flow", lambda: FakeHost().flow("tool:none")),
]


@pytest.mark.parametrize(("case", "call"), ARGUMENTS, ids=[case for case, _ in ARGUMENTS])
def test_a_bad_argument_is_an_invalid_argument(case: str, call: Callable[[], object]) -> None:
    with pytest.raises(InvalidArgument) as caught:
        call()
    error = caught.value
    assert isinstance(error, PiAskError)
    assert isinstance(error, TypeError)
    assert isinstance(error, ValueError)
    assert error.code == "invalid_argument"
    assert error.method, case
    assert error.argument, case


class _Deaf:
    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        pass

    def ended(self, reason: EndReason) -> None:
        pass


def test_opening_a_transport_twice_is_invalid_use() -> None:
    async def twice() -> None:
        transport = MemoryTransport(LocalEventBus())
        await transport.open(_Deaf())
        await transport.open(_Deaf())

    with pytest.raises(InvalidUse, match="already open") as caught:
        asyncio.run(twice())
    assert isinstance(caught.value, RuntimeError)
    assert caught.value.code == "invalid_use"


def test_a_scripted_transport_not_open_is_invalid_use() -> None:
    with pytest.raises(InvalidUse, match="not open"):
        ScriptedTransport().deliver("x", {})


class _LoopSpy(MemoryTransport):
    """Notes the loop it is opened on: the sync client's own loop thread's."""

    loop: asyncio.AbstractEventLoop | None = None

    async def open(self, listener: TransportListener) -> None:
        self.loop = asyncio.get_running_loop()
        await super().open(listener)


def test_a_sync_client_called_from_its_own_loop_thread_is_invalid_use() -> None:
    host = FakeHost()
    transport = _LoopSpy(host.bus, host.host)
    seen: list[BaseException] = []

    async def call_back(client: SyncBridgeClient) -> None:
        try:
            assert client.open_flows is None  # (raises before)
        except BaseException as error:  # (recorded for the test thread)
            seen.append(error)

    with SyncBridgeClient(transport, timeout=TIMEOUT) as client:
        assert transport.loop is not None
        asyncio.run_coroutine_threadsafe(call_back(client), transport.loop).result(TIMEOUT)
    assert len(seen) == 1
    assert isinstance(seen[0], InvalidUse)
    assert isinstance(seen[0], RuntimeError)


def test_a_client_not_open_is_invalid_use() -> None:
    client = BridgeClient(MemoryTransport(LocalEventBus()))
    with pytest.raises(ClientNotOpen) as caught:
        client.flows()
    assert isinstance(caught.value, InvalidUse)
    assert isinstance(caught.value, RuntimeError)
    assert caught.value.code == "client_not_open"


BUILTINS = {
    "ValueError",
    "TypeError",
    "RuntimeError",
    "KeyError",
    "IndexError",
    "LookupError",
    "OSError",
    "Exception",
    "NotImplementedError",
}


def bare_raises(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            name = ast.unparse(node.exc.func)
            if name in BUILTINS:
                found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_no_library_module_raises_a_bare_builtin() -> None:
    """The library (``pi_ask_sdk`` outside ``testing/`` and ``cli/``) raises only errors of the
    tree (a module's ``__getattr__`` raises ``AttributeError``, as Python requires)."""
    package = ROOT / "pi_ask_sdk"
    library = [
        path
        for path in package.rglob("*.py")
        if path.relative_to(package).parts[0] not in ("testing", "cli")
    ]
    assert len(library) > 20
    assert [line for path in library for line in bare_raises(path)] == []


def test_the_bare_raise_check_finds_one(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    raise ValueError('x')\n", encoding="utf-8")
    assert bare_raises(source) == ["m.py:2: ValueError"]
