"""What ``import pi_ask_core`` offers: exactly what a host or bridge author handles (as
``tests/sdk/test_exports.py`` for the SDK); everything else is reached by its module."""

from __future__ import annotations

import importlib

import pi_ask_core

ROOT = [
    # the host on a bus
    "EventBus",
    "FlowHandle",
    "FlowHost",
    "LocalEventBus",
    # the channels
    "CHANNELS",
    "COMPLETED",
    "STARTED",
    "SUBMIT",
    "SUBMIT_RESULT",
    # the wire Structs of each channel, and what they carry
    "AnswerResponse",
    "AskParams",
    "AskResult",
    "CancelResponse",
    "CompletedEvent",
    "RemoteAnswer",
    "StartedEvent",
    "SubmitAck",
    "SubmitEvent",
    "SubmitRejection",
    "SubmitResultEvent",
    "Skipped",
    "decode_event",
    # the errors
    "HostClosed",
    "InvalidForm",
    "PiAskError",
    "SubmitRefused",
    # versions
    "PROTOCOL_VERSION",
    "__version__",
]

MODULES = (
    "answers",
    "background",
    "bus",
    "errors",
    "events",
    "external_ui",
    "forms",
    "host",
    "js",
    "protocol",
    "results",
    "schema",
)


def test_the_root_exports_exactly_what_a_host_author_uses() -> None:
    assert sorted(pi_ask_core.__all__) == sorted(ROOT)
    for name in ROOT:
        assert hasattr(pi_ask_core, name), name


def test_the_root_names_the_same_objects_as_their_modules() -> None:
    for name in ROOT:
        value = getattr(pi_ask_core, name)
        module = getattr(value, "__module__", None)
        if isinstance(value, type) and module and module.startswith("pi_ask_core."):
            assert getattr(importlib.import_module(module), name) is value, name


def test_every_name_left_out_of_the_root_is_in_a_module_face() -> None:
    faces = {
        name
        for module in MODULES
        for name in importlib.import_module(f"pi_ask_core.{module}").__all__
    }
    assert set(ROOT) - {"__version__"} <= faces
    for name in ("parse_form", "build_result", "BackgroundQueue", "ask_route", "AskQuestion"):
        assert name in faces
        assert name not in pi_ask_core.__all__
        assert not hasattr(pi_ask_core, name)
