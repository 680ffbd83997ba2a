"""The errors of the test tooling (``pi_ask_sdk.testing``), a branch of the one ``PiAskError``
tree (``pi_ask_sdk.errors`` draws the bridge library's):

    PiAskError                         root (pi_ask_core.errors); catch it to handle them all
    └── ToolingError                   everything pi_ask_sdk.testing raises
        ├── StandinError               the stand-in host's server (testing.standin) cannot listen
        │   ├── StandinPathTooLong     (also ValueError) longer than a Unix socket path may be
        │   └── StandinInUse           a live stand-in server already answers at that path
        ├── PiNotInstalled             (also RuntimeError) the real-Pi kit: no such Pi
        ├── PiFailed                   (also RuntimeError) the real-Pi kit: Pi did not do it
        ├── UnknownFlow                (also LookupError) the real-Pi kit: no flow opened here
        ├── NatsServerError            (also RuntimeError) testing.nats_server: no server
        └── TransportCheckFailed       (also AssertionError) check_transport: a check failed

Each has a stable ``code`` (a ``Literal``). Bridges never meet these: only tests and the
``pi-ask`` command do.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from pi_ask_core import PiAskError
from pi_ask_sdk.transports.relay import MAX_SOCKET_PATH

if TYPE_CHECKING:
    from pathlib import Path  # only annotations: importing the errors need not load pathlib

__all__ = [
    "NatsServerError",
    "PiFailed",
    "PiInstallProblem",
    "PiNotInstalled",
    "StandinError",
    "StandinInUse",
    "StandinPathTooLong",
    "ToolingError",
    "ToolingErrorCode",
    "TransportCheckFailed",
    "UnknownFlow",
]

ToolingErrorCode = Literal[
    "standin_unavailable",
    "pi_not_installed",
    "pi_failed",
    "nats_server_unavailable",
    "transport_check_failed",
    "flow_not_opened",
]
"""The ``code`` of every ``ToolingError``: stable, for programs to match on."""


class ToolingError(PiAskError):
    """Base of every error raised by ``pi_ask_sdk.testing`` (the stand-in host, the real-Pi
    kit, ``check_transport``); catch it to handle them all."""

    code: ToolingErrorCode


# --- the stand-in host (pi_ask_sdk.testing.standin) ----------------------------------------------


class StandinError(ToolingError):
    """The stand-in host's server cannot listen (``path`` says where; the message why)."""

    code: Literal["standin_unavailable"] = "standin_unavailable"

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(message)


class StandinPathTooLong(StandinError, ValueError):
    """The stand-in's socket path is longer than a Unix socket path may be (107 bytes)."""

    def __init__(self, path: Path) -> None:
        size = len(os.fsencode(path))
        super().__init__(
            path,
            f"The stand-in socket path {path} is {size} bytes, longer than the "
            f"{MAX_SOCKET_PATH} bytes a Unix socket path may have. Give StandinServer a shorter "
            "socket_path, or leave it out: the server then makes a private directory under "
            "$XDG_RUNTIME_DIR, else the temporary directory (set TMPDIR to a shorter one).",
        )


class StandinInUse(StandinError):
    """A live stand-in server already answers at the socket path (a stale socket is replaced)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            path,
            f"Another stand-in server answers at {path}: stop it, or give this one another "
            "socket_path (a socket nothing answers at is replaced).",
        )


# --- the real-Pi test kit (pi_ask_sdk.testing.realpi) --------------------------------------------


PiInstallProblem = Literal[
    "not_installed", "stale", "npm_missing", "npm_failed", "npm_timeout", "cache_unusable"
]
"""Why Pi is not there: never installed, an install that does not verify (``stale``: missing,
empty, truncated or changed files, other lock files), npm missing, failing, or too slow, or a
cache directory that cannot be created or written (``cache_unusable``)."""


class PiNotInstalled(ToolingError, RuntimeError):
    """The requested Pi flavour is not installed or cannot be (the message says why).

    ``problem`` names the cause, ``path`` the cache directory and ``command`` the npm command
    that installs it (None where they do not apply)."""

    code: Literal["pi_not_installed"] = "pi_not_installed"

    def __init__(
        self,
        message: str,
        *,
        problem: PiInstallProblem = "not_installed",
        path: Path | None = None,
        command: str | None = None,
    ) -> None:
        super().__init__(message)
        self.problem: PiInstallProblem = problem
        self.path = path
        self.command = command


class PiFailed(ToolingError, RuntimeError):
    """Pi did not do what was expected in time (the message carries its stderr tail)."""

    code: Literal["pi_failed"] = "pi_failed"


# --- the nats-server harness (pi_ask_sdk.testing.nats_server) -------------------------------------


class NatsServerError(ToolingError, RuntimeError):
    """The test ``nats-server`` is not installed or did not start (the message says why)."""

    code: Literal["nats_server_unavailable"] = "nats_server_unavailable"


# --- check_transport (pi_ask_sdk.testing) --------------------------------------------------------


class UnknownFlow(ToolingError, LookupError):
    """``PiProcess.result`` was given a flow id this Pi process never opened: waiting for it
    could only time out. ``flow_id`` is what was given, ``known`` the flows opened here."""

    code: Literal["flow_not_opened"] = "flow_not_opened"

    def __init__(self, flow_id: str, known: tuple[str, ...]) -> None:
        self.flow_id = flow_id
        self.known = known
        opened = ", ".join(repr(each) for each in known) if known else "none yet"
        super().__init__(
            f"No flow {flow_id!r} was opened by this Pi process (opened here: {opened}); pass "
            "the flow id open_form or call_ask_user returned (tool call 'x' opens flow 'tool:x')"
        )


class TransportCheckFailed(ToolingError, AssertionError):
    """A check of ``pi_ask_sdk.testing.check_transport`` failed: ``check`` names it."""

    code: Literal["transport_check_failed"] = "transport_check_failed"

    def __init__(self, check: str, problem: str) -> None:
        self.check = check
        self.problem = problem
        super().__init__(f"Transport check {check!r} failed: {problem}.")
