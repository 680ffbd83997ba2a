"""Test a bridge without Pi: ``FakeHost`` (a real ``FlowHost`` on a ``LocalEventBus``) and
``ScriptedTransport`` (deliver any raw payload to a client).

``FakeHost`` answers submits synchronously, like Pi's extension, so tests need no sleeps:

    host = FakeHost()                       # or FakeHost(order="ack_first")
    async with host.client() as client:
        host.open(yes_no_params("deploy"), tool_call_id="c1")
        flow = await client.flows().next(timeout=1)
        outcome = await client.respond(flow, AnswerBuilder(flow).select(...).build(), timeout=1)

``check_transport(make_transport, open_form)`` checks a ``Transport`` against the contract of
``pi_ask_sdk.transports.base`` on a live host (used on every transport this package ships).

``order`` chooses which of ``completed`` and ``submit-result`` a remote submit emits first:
``"completed_first"`` is the reference order; bridges must work with both. Every payload on the
four channels is recorded (as decoded JSON) for assertions.

This module is the face; the code lives in modules named for what they hold: ``_fake_host``
(``FakeHost``), ``_scripted`` (``ScriptedTransport``), ``_conformance`` (``check_transport``),
``_params`` (``AskParams``, ``yes_no_params``) and ``_unchecked`` (``unchecked_answer``). Beside
them: ``errors`` (the tooling's errors), ``fleet`` (``FakeFleet``: a fleet bridge's handler
under ``serve`` without a NATS server; needs the ``nats`` extra, so it is imported from there),
``standin`` (the stand-in host), ``realpi`` (the real-Pi kit), ``pytest_plugin`` and
``nats_server``.
"""

from __future__ import annotations

from pi_ask_sdk._faces import publish
from pi_ask_sdk.responses import UncheckedAnswer

from ._conformance import CHECKS, check_transport
from ._fake_host import AckOrder, FakeHost, RecordedEvent
from ._params import AskParams, AskParamsOption, AskParamsQuestion, yes_no_params
from ._scripted import ScriptedTransport
from ._unchecked import unchecked_answer
from .errors import TransportCheckFailed

__all__ = [
    "CHECKS",
    "AckOrder",
    "AskParams",
    "AskParamsOption",
    "AskParamsQuestion",
    "FakeHost",
    "RecordedEvent",
    "ScriptedTransport",
    "TransportCheckFailed",
    "UncheckedAnswer",
    "check_transport",
    "unchecked_answer",
    "yes_no_params",
]

publish(__name__, __all__, globals())
