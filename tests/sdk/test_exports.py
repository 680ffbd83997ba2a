"""What ``import pi_ask_sdk`` offers: exactly what a bridge author uses (as httpx's
``test_exported_members``), and nothing else: a name imported from its own module is not
reachable from the root too."""

from __future__ import annotations

import importlib
import warnings
from types import FunctionType

import pytest

import pi_ask_sdk

ROOT = [
    # the clients
    "DEFAULT_TIMEOUT",
    "BridgeClient",
    "ClientStream",
    "SyncBridgeClient",
    "SyncClientStream",
    # the views of a form
    "AnyFlow",
    "DisplayText",
    "FlowId",
    "FlowView",
    "OptionValue",
    "OptionView",
    "QuestionId",
    "QuestionView",
    # the responses and their builders
    "Answer",
    "AnswerBuilder",
    "ApprovalMapping",
    "BoundApproval",
    "ButtonAction",
    "Cancel",
    "CancelFlow",
    "QuestionAnswer",
    "Response",
    "SelectOption",
    # the outcomes and events
    "BridgeEvent",
    "FlowCompleted",
    "FlowStarted",
    "RespondOutcome",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitLost",
    "SubmitNotSent",
    "SubmitOutcome",
    "SubmitRejected",
    "SubmitTicket",
    "SubmitTimedOut",
    # the errors a bridge catches
    "ApprovalMappingError",
    "BridgeError",
    "ClientNotOpen",
    "ConnectionLost",
    "FlowAlreadyAnswered",
    "FlowAlreadyCompleted",
    "FlowClosed",
    "FlowMismatch",
    "InvalidArgument",
    "InvalidCustomText",
    "InvalidOptionNote",
    "InvalidResponse",
    "InvalidSelection",
    "PiAskError",
    "TransportUnavailable",
    "UnknownOption",
    "UnknownQuestion",
    "WaitTimeout",
    # JSON
    "JsonValue",
    "flow_from_json",
    "response_from_json",
    "to_data",
    "to_json",
    "__version__",
]

ELSEWHERE = {
    "ApprovalProblem": "pi_ask_sdk.errors",
    "HostClosed": "pi_ask_sdk.errors",
    "InvalidRequestId": "pi_ask_sdk.errors",
    "NotSentReason": "pi_ask_sdk.outcomes",
    "UncheckedAnswer": "pi_ask_sdk.responses",
    "JsonObject": "pi_ask_sdk.serialise",
    "MemoryTransport": "pi_ask_sdk.transports",
    "Transport": "pi_ask_sdk.transports",
    "NoRelayFound": "pi_ask_sdk.transports.relay",
    "AmbiguousRelay": "pi_ask_sdk.transports.relay",
    "PiFailed": "pi_ask_sdk.testing.errors",
    "TransportCheckFailed": "pi_ask_sdk.testing.errors",
}
"""Some names a bridge imports from their modules (CHANGELOG.md, 0.2.0, says where each went)."""


def test_the_root_exports_exactly_what_a_bridge_author_uses() -> None:
    assert sorted(pi_ask_sdk.__all__) == sorted(ROOT)
    for name in ROOT:
        assert hasattr(pi_ask_sdk, name), name


def test_every_root_name_resolves_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ROOT:
            getattr(pi_ask_sdk, name)


def test_the_root_names_the_same_objects_as_their_modules() -> None:
    # (a class or function says the public module it is imported from: reprs, tracebacks,
    # pickles)
    for name in ROOT:
        value = getattr(pi_ask_sdk, name)
        if isinstance(value, (type, FunctionType)) and value.__module__.startswith("pi_ask_"):
            assert not any(part.startswith("_") for part in value.__module__.split(".")), name
            assert getattr(importlib.import_module(value.__module__), name) is value, name


@pytest.mark.parametrize(("name", "module"), sorted(ELSEWHERE.items()))
def test_a_name_of_another_module_is_not_in_the_root(name: str, module: str) -> None:
    assert name in importlib.import_module(module).__all__
    assert not hasattr(pi_ask_sdk, name)
    with pytest.raises(ImportError):
        exec(f"from pi_ask_sdk import {name}", {})


@pytest.mark.parametrize(
    "module", ["pi_ask_sdk.standin", "pi_ask_sdk.realpi", "pi_ask_sdk.pytest_plugin"]
)
def test_the_tooling_is_only_under_testing(module: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)
