"""The JSON Pi writes in RPC mode, and the reports of the stand-in's ``/pi-ask-test-*`` commands.

Only the keys this kit and its users read are named; Pi may send more.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal, cast

from typing_extensions import NotRequired, TypedDict

if TYPE_CHECKING:
    from pi_ask_wire import (
        AskContinuationPayload,
        AskElaborationPayload,
        AskQuestionSummary,
        AskResultAnswer,
        InvalidInputError,
    )
    from pi_ask_wire import AskResult as AskResultJSON

__all__ = [
    "AskToolDetails",
    "PiRecord",
    "ReportIssue",
    "StandinReport",
    "ToolContent",
    "ToolResult",
    "report_of",
]


class ToolContent(TypedDict, total=False):
    """One part of a tool result's ``content`` (``type`` ``"text"`` and its ``text``)."""

    type: str
    text: str


class AskToolDetails(TypedDict):
    """``details`` of an ``ask_user`` result: the ``AskResult``, or for a form that fails
    validation the ``InvalidInputResult`` (cancelled, with ``error``), as JSON."""

    title: NotRequired[str]
    cancelled: bool
    mode: Literal["submit", "elaborate"]
    questions: list[AskQuestionSummary]
    answers: dict[str, AskResultAnswer]
    continuation: NotRequired[AskContinuationPayload]
    elaboration: NotRequired[AskElaborationPayload]
    error: NotRequired[InvalidInputError]


class ToolResult(TypedDict, total=False):
    """The ``ask_user`` tool's result in a ``tool_execution_end`` record (``content`` is what
    the model reads)."""

    content: list[ToolContent]
    details: AskToolDetails


class PiRecord(TypedDict, total=False):
    """One record of Pi's RPC stdout (``type`` says which); ``_non_json`` for a line that was not
    a JSON object (``text`` or ``value`` holds it)."""

    type: str
    id: str
    command: str
    success: bool
    error: str
    data: dict[str, object]
    method: str
    message: str
    toolCallId: str
    toolName: str
    isError: bool
    result: ToolResult
    text: str
    value: object


class ReportIssue(TypedDict):
    """One issue of a stand-in report (as in ``pi_ask_core.protocol.Issue``)."""

    path: str
    message: str


class StandinReport(TypedDict):
    """What ``/pi-ask-test-<command>`` reports: ``ok``, else ``error`` and ``message``."""

    command: str
    ok: bool
    flowId: NotRequired[str]
    flowIds: NotRequired[list[str]]
    error: NotRequired[str]
    message: NotRequired[str]
    issues: NotRequired[list[ReportIssue]]
    result: NotRequired[AskResultJSON]


def report_of(record: PiRecord, command: str) -> StandinReport | None:
    """The stand-in's report of ``command`` if ``record`` is its ``pi-ask-test {...}`` notify."""
    if record.get("type") != "extension_ui_request" or record.get("method") != "notify":
        return None
    message = record.get("message")
    if not isinstance(message, str) or not message.startswith("pi-ask-test "):
        return None
    try:
        report = json.loads(message[len("pi-ask-test ") :])
    except ValueError:
        return None
    if not isinstance(report, dict) or report.get("command") != command:
        return None
    return cast(StandinReport, report)  # written by this package's stand-in extension
