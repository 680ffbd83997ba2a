"""The stand-in host: ``pi_ask_core.FlowHost`` answering a real Pi's forms through a thin extension.

The real host of Pi's ask forms is the ``pi-agent-ask`` extension (a Pi package). To try or test
a bridge without it, load the shipped extension ``pi-ask-standin.ts`` (its path:
``pi-ask standin-path``) into Pi and run a ``StandinServer`` here. The extension registers the
``ask_user`` tool, the ``/pi-ask-test-*`` commands and a scripted faux model, and forwards every
decision to the server, whose ``FlowHost`` is the one rules engine of this project: form
validation, the ``started`` payload, submit checks and results all come from ``pi_ask_core``.

Trust rules, as for the relay: the server listens on a Unix socket (mode 0600) in a directory
owned by this uid with mode 0700, refuses peers of another uid, and the extension does nothing
unless ``PI_ASK_STANDIN_SOCKET`` names that socket (and checks the same rules before connecting).

Link protocol (JSON lines, split on ``\\n`` only), one connection per Pi session:

    extension -> server   {"type":"hello","pid":N,"cwd":"..."}
                          {"type":"submit","data":...}          every emit on pi-agent-ask:submit
                          {"type":"command","ref":R,"name":"open|cancel|dispose|list","args":"..."}
                          {"type":"tool","ref":R,"toolCallId":"...","params":{...},"mode":M}
                                                                M: Pi's run mode (null if none)
                          {"type":"provider","ref":R,"connected":B}  after "negotiate": whether
                                                                an external-UI provider connected
                          {"type":"provided","ref":R,"response":...}  its open() resolved
                          {"type":"provider_failed","ref":R,"message":"..."}  open() rejected
                          {"type":"abort","ref":R}              the tool call was aborted (the
                                                                flow completes cancelled)
                          {"type":"failed","ref":R}             the call failed: this server did
                                                                not answer in time (the flow is
                                                                disposed, no completed)
    server -> extension   {"type":"emit","channel":C,"data":...}   emitted on pi.events
                          {"type":"report","ref":R,"report":{...}} the command's report (notified)
                          {"type":"negotiate","ref":R}   emit pi-agent-ask:external-ui now, and
                                                                say whether a provider connected
                          {"type":"opened","ref":R,"flowId":"...","cancelled":{AskResult},
                           "request"?:{...}}            the flow opened; with "request": call
                                                        the provider's open() with it (+ signal)
                          {"type":"result","ref":R,"text":"...","result":{...},"abort":B}
                                                        the tool's result; abort: end the
                                                        agent's turn (a completed cancel)
                          {"type":"error","ref":R,"message":"..."}  the tool fails (malformed
                                                        input, the provider failed or answered
                                                        invalidly)
                          {"type":"answer","customType":T,"text":"...","details":{...},
                           "triggerTurn":B}             a background form ended: pi.sendMessage
                                                        it (deliverAs followUp)

The server decides (``pi_ask_core.external_ui``): in the TUI (mode ``"tui"``) a valid call
opens at once, unless it is a background call (``background: true``): that one's ``result`` is
the queued receipt, sent at once, and its form opens when
``pi_ask_core.background.BackgroundQueue`` says (one at a time, first in first out); when it
ends, an ``answer`` brings the result to the model
(simplified: no ``wait_for_answers`` tool, no turn-boundary hand-over, the queue is not kept
across sessions; see ``pi-ask docs real-pi``). In any other mode it answers ``negotiate``, and then
opens the flow (``opened`` with the provider's ``request``) or, with no provider, returns the
non-interactive result with no event. The extension accepts a provider itself (``connect()``
must answer inside the emit): the first with version 1, a non-blank id and an ``open`` function.

When the connection ends (session shutdown, Pi exits) the session's ``FlowHost`` is closed: its
flows are disposed without ``completed``, as in Pi.

Modules: ``_link`` (the socket variable, JSON lines, trust checks), ``_session``
(``StandinSession``: a session's ``FlowHost`` and the test commands), ``_server``
(``StandinServer``), ``_thread`` (``StandinThread``, ``running_standin``).
"""

from __future__ import annotations

from pi_ask_sdk._faces import publish
from pi_ask_sdk.testing.errors import StandinError, StandinInUse, StandinPathTooLong

from ._link import ENV_SOCKET, ENV_TIMEOUT, standin_extension_path
from ._server import StandinServer
from ._session import SessionOwner, StandinSession
from ._thread import StandinThread, running_standin

__all__ = [
    "ENV_SOCKET",
    "ENV_TIMEOUT",
    "SessionOwner",
    "StandinError",
    "StandinInUse",
    "StandinPathTooLong",
    "StandinServer",
    "StandinSession",
    "StandinThread",
    "running_standin",
    "standin_extension_path",
]

publish(__name__, __all__, globals())
