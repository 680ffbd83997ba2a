"""The one exception hierarchy of pi-ask (the SDK's errors derive from ``PiAskError`` too)."""

from __future__ import annotations

from typing import Literal

from .protocol import InvalidInputResult, Issue, SubmitErrorCode

__all__ = ["FormErrorKind", "HostClosed", "InvalidForm", "PiAskError", "SubmitRefused"]

FormErrorKind = Literal["schema_error", "invalid_input"]
"""Why ``InvalidForm`` refused a form: a field of the wrong JSON type (``schema_error``) or a
broken form rule (``invalid_input``, with the tool result the extension returns)."""


class PiAskError(Exception):
    """Base of every error raised by ``pi_ask_core`` and ``pi_ask_sdk``.

    ``code`` is a stable machine-readable string; the message is for people.
    """

    code: str = "pi_ask_error"


class InvalidForm(PiAskError):
    """ask_user input that cannot open a form.

    ``kind`` is ``"schema_error"`` when a field has the wrong JSON type (Pi's tool schema would
    refuse the call; there is no structured tool result) and ``"invalid_input"`` when the form
    breaks a rule of spec §2.3 or a preview file cannot be loaded; then ``result`` is exactly the
    tool result the extension returns.
    """

    def __init__(
        self, kind: FormErrorKind, issues: tuple[Issue, ...], result: InvalidInputResult | None
    ) -> None:
        self.kind: FormErrorKind = kind
        self.code = kind
        self.issues = issues
        self.result = result
        lines = "\n".join(f"- {issue.path}: {issue.message}" for issue in issues)
        heading = (
            "Invalid ask_user payload" if kind == "invalid_input" else "Malformed ask_user input"
        )
        super().__init__(f"{heading}:\n{lines}")


class SubmitRefused(PiAskError):
    """A response the host refused, raised where a caller answers a flow directly (no bus)."""

    def __init__(self, code: SubmitErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class HostClosed(PiAskError):
    """The host was closed (session shutdown): it opens no more flows."""

    code = "host_closed"
