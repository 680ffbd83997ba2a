"""What ``import pi_ask_sdk`` offers: exactly what a bridge author uses (as httpx's
``test_exported_members``); every name that left the root resolves for one release, with a
warning naming its module."""

from __future__ import annotations

import importlib
import warnings

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
    "AmbiguousRelay",
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
    "NoRelayFound",
    "PiAskError",
    "RelayError",
    "RelayHandshakeError",
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

MOVED = {
    "ApprovalProblem": "pi_ask_sdk.errors",
    "BridgeErrorCode": "pi_ask_sdk.errors",
    "ConnectionLostReason": "pi_ask_sdk.errors",
    "CustomTextProblem": "pi_ask_sdk.errors",
    "HostClosed": "pi_ask_sdk.errors",
    "InvalidForm": "pi_ask_sdk.errors",
    "InvalidRequestId": "pi_ask_sdk.errors",
    "MismatchedPiece": "pi_ask_sdk.errors",
    "OptionNoteProblem": "pi_ask_sdk.errors",
    "RelayConnectError": "pi_ask_sdk.errors",
    "RelayPathMissing": "pi_ask_sdk.errors",
    "RelayPathNotSocket": "pi_ask_sdk.errors",
    "RelayPathTooLong": "pi_ask_sdk.errors",
    "ResponseProblem": "pi_ask_sdk.errors",
    "SelectProblem": "pi_ask_sdk.errors",
    "SubmitRefused": "pi_ask_sdk.errors",
    "UnknownTicket": "pi_ask_sdk.errors",
    "UnsafeRelayPath": "pi_ask_sdk.errors",
    "NotSentReason": "pi_ask_sdk.outcomes",
    "UncheckedAnswer": "pi_ask_sdk.responses",
    "JsonObject": "pi_ask_sdk.serialise",
    "Serialisable": "pi_ask_sdk.serialise",
    "EndReason": "pi_ask_sdk.transports",
    "MemoryTransport": "pi_ask_sdk.transports",
    "Transport": "pi_ask_sdk.transports",
    "TransportFactory": "pi_ask_sdk.transports",
    "TransportListener": "pi_ask_sdk.transports",
    "PiFailed": "pi_ask_sdk.testing.errors",
    "PiNotInstalled": "pi_ask_sdk.testing.errors",
    "StandinError": "pi_ask_sdk.testing.errors",
    "StandinInUse": "pi_ask_sdk.testing.errors",
    "StandinPathTooLong": "pi_ask_sdk.testing.errors",
    "TransportCheckFailed": "pi_ask_sdk.testing.errors",
}


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
    for name in ROOT:
        value = getattr(pi_ask_sdk, name)
        module = getattr(value, "__module__", None)
        if isinstance(value, type) and module and module.startswith("pi_ask_sdk."):
            assert getattr(importlib.import_module(module), name) is value, name


@pytest.mark.parametrize(("name", "module"), sorted(MOVED.items()))
def test_a_name_that_left_the_root_resolves_with_a_warning(name: str, module: str) -> None:
    assert name not in pi_ask_sdk.__all__
    expected = rf"pi_ask_sdk\.{name} is deprecated: import it from {module}\b"
    with pytest.warns(DeprecationWarning, match=expected) as seen:
        value = getattr(pi_ask_sdk, name)
    assert [w.filename for w in seen] == [__file__]  # the line that used it
    target = importlib.import_module(module)
    assert name in target.__all__
    assert value is getattr(target, name)


def test_from_import_of_a_moved_name_warns_at_the_importing_line() -> None:
    with pytest.warns(DeprecationWarning, match="MemoryTransport is deprecated") as seen:
        from pi_ask_sdk import MemoryTransport  # type: ignore[attr-defined]
    # one warning: the import system's probe of the package for a submodule of that name
    # (hasattr) does not warn too
    assert [w.filename for w in seen] == [__file__]
    from pi_ask_sdk.transports import MemoryTransport as here

    assert MemoryTransport is here


def test_the_deprecation_table_is_what_this_test_lists() -> None:
    moved = pi_ask_sdk._MOVED  # (the table the root's __getattr__ reads)
    assert moved == MOVED
