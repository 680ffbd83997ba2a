"""The external-UI negotiation of a host outside its TUI (spec Appendix B), as host rules.

Outside the TUI a foreground ``ask_user`` call does not open its form by itself: the host emits
one ``pi-agent-ask:external-ui`` event, and opens the flow only if a provider connects during
that emit. These are the decisions a host makes around that event (the stand-in host's server
makes them; its Pi extension only emits the event and forwards what happened). Bridges never see
any of it: they keep using the four channels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from msgspec import UNSET, UnsetType

from ._wire import WireStruct
from .forms import Form
from .host import FlowHandle
from .protocol import AskQuestion, AskResult
from .results import build_result

__all__ = [
    "EXTERNAL_UI",
    "AskRoute",
    "ExternalUiRequest",
    "ask_route",
    "external_ui_request",
    "invalid_provider_response",
    "negotiates",
    "non_interactive_result",
]

EXTERNAL_UI: Final = "pi-agent-ask:external-ui"
"""The channel of the negotiation event ``{version: 1, mode, toolCallId, connect(provider)}``."""


class ExternalUiRequest(WireStruct, frozen=True, kw_only=True):
    """What the provider's ``open(request)`` is given (without the ``signal``, which the host's
    process adds): the normalized form, previews as text, no file paths."""

    version: Literal[1] = 1
    flow_id: str
    tool_call_id: str
    title: str | UnsetType = UNSET
    questions: list[AskQuestion]


def negotiates(mode: object) -> bool:
    """Whether a foreground ``ask_user`` call in Pi's run ``mode`` negotiates an external UI
    before its form opens: every mode but the TUI (``"rpc"``, ``"json"``, ``"print"``, and a
    Pi too old to say its mode). In the TUI the host's own form opens directly."""
    return mode != "tui"


AskRoute = Literal["open", "queue", "negotiate", "fallback"]
"""How a validated ``ask_user`` call goes on: its form ``open``s at once (the call waits for
it), it joins the TUI's background ``queue`` (the call returns a receipt at once, see
``pi_ask_core.background``), the host ``negotiate``s an external UI first, or the tool returns
the non-interactive ``fallback``."""


def ask_route(mode: object, params: object) -> AskRoute:
    """The route of a validated ``ask_user`` call with input ``params`` in Pi's run ``mode``: in
    the TUI a foreground call's form opens and a background call (``background: true``) is
    queued; elsewhere a background call gets the non-interactive result at once, with no
    negotiation, no flow and no event (spec §3.1), and a foreground call negotiates an external
    UI."""
    background = isinstance(params, Mapping) and params.get("background") is True
    if not negotiates(mode):
        return "queue" if background else "open"
    return "fallback" if background else "negotiate"


def non_interactive_result(form: Form) -> AskResult:
    """The tool result when no provider connected (spec §5.7): the normalized form as a
    cancelled result with no answers. No flow exists, and no event is emitted."""
    return build_result(form, {}, cancelled=True)


def external_ui_request(handle: FlowHandle) -> ExternalUiRequest:
    """The provider's request for the flow the negotiation opened."""
    return ExternalUiRequest(
        flow_id=handle.flow_id,
        tool_call_id=handle.tool_call_id or "",
        title=handle.form.title,
        questions=list(handle.questions),
    )


def invalid_provider_response(message: str) -> str:
    """The tool error when the provider resolves ``open`` with a response the host refuses
    (the flow was still open): the call fails instead of leaving the form open."""
    return f"External ask UI returned an invalid response: {message}"
