"""The relay transport's errors, a branch of the one ``PiAskError`` tree (``pi_ask_sdk.errors``
draws the library's; these are all ``TransportUnavailable``, code ``transport_unavailable``):

    RelayError                         everything the relay transport raises
    ├── NoRelayFound                   no running Pi with the relay (or not the one asked for)
    │   └── RelayPathMissing           (also FileNotFoundError) no such directory/socket
    ├── AmbiguousRelay                 several Pis: choose one
    ├── UnsafeRelayPath                the directory or socket breaks the same-user rules
    │   └── RelayPathNotSocket         the path given as a socket is none (told first)
    ├── RelayHandshakeError            no valid hello (with its replays) in time
    ├── RelayPathTooLong               longer than a Unix socket path may be
    └── RelayConnectError              connecting failed (errno kept, the OSError as cause)

``pi_ask_sdk.transports.relay`` exports them all.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

from pi_ask_sdk.errors import TransportUnavailable

if TYPE_CHECKING:
    from pathlib import Path  # only annotations: importing the errors need not load pathlib

    from ._relay_info import RelayInfo

__all__ = [
    "MAX_SOCKET_PATH",
    "AmbiguousRelay",
    "NoRelayFound",
    "RelayConnectError",
    "RelayError",
    "RelayHandshakeError",
    "RelayPathMissing",
    "RelayPathNotSocket",
    "RelayPathTooLong",
    "UnsafeRelayPath",
]

MAX_SOCKET_PATH: Final = 107
"""Longest Unix socket path in bytes (``sun_path`` is 108 bytes with its terminating NUL)."""


class RelayError(TransportUnavailable):
    """Base of the relay transport's errors (code ``transport_unavailable``)."""


class NoRelayFound(RelayError):
    """No running Pi has a relay socket in the directory (or the requested one is missing)."""

    def __init__(self, directory: Path, detail: str = "") -> None:
        self.directory = directory
        super().__init__(
            f"No running Pi with the pi-ask relay found in {directory}"
            f"{': ' + detail if detail else ''}. Start Pi with "
            '`pi -e "$(pi-ask relay-path)"` (and the pi-agent-ask extension), or set '
            "PI_ASK_RELAY_DIR to the directory it uses."
        )


class AmbiguousRelay(RelayError):
    """Several Pis run a relay; the caller must pick one by pid or path."""

    def __init__(self, relays: tuple[RelayInfo, ...]) -> None:
        self.relays = relays
        listing = ", ".join(
            f"forwarded ({r.path})" if r.forwarded else f"pid {r.pid} ({r.path})" for r in relays
        )
        super().__init__(
            f"{len(relays)} Pi processes run the pi-ask relay: {listing}. "
            "Choose one with RelayTransport(pid=...) or RelayTransport(path=...)."
        )


class UnsafeRelayPath(RelayError):
    """The relay directory or socket breaks the same-user rules; nothing was connected."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"Refusing relay path {path}: {problem}.")


class RelayPathNotSocket(UnsafeRelayPath):
    """The path given as a relay socket exists but is no Unix socket (``kind`` says what it is:
    ``"regular file"``, ``"directory"``, ``"symbolic link"``, ...); told before anything about
    its directory, since no directory mode would make it one."""

    def __init__(self, path: Path, kind: str) -> None:
        self.kind = kind
        super().__init__(
            path,
            f"it is a {kind}, not a Unix socket; give the socket Pi's relay listens on "
            "(pi-<pid>.sock in the relay directory, or one forwarded there with ssh -L)",
        )


class RelayHandshakeError(RelayError):
    """The socket did not greet with a valid protocol-1 ``hello`` (and its replays) in time.

    ``retryable`` is true when the connection was merely cut short or slow (a reconnect may
    succeed while Pi lives), false when the relay is not one this client can speak to.
    """

    def __init__(self, path: Path, problem: str, *, retryable: bool = True) -> None:
        self.path = path
        self.problem = problem
        self.retryable = retryable
        super().__init__(f"Relay at {path}: {problem}.")


class RelayPathTooLong(RelayError):
    """The socket path is longer than a Unix socket path may be (107 bytes on Linux)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"The relay socket path {path} is {len(os.fsencode(path))} bytes, longer than the "
            f"{MAX_SOCKET_PATH} bytes a Unix socket path may have. Set PI_ASK_RELAY_DIR to a "
            "shorter directory (the same for Pi and for this client)."
        )


class RelayConnectError(RelayError):
    """Connecting to the relay socket failed (``errno`` and the OS's reason kept)."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.errno = error.errno
        self.strerror = error.strerror or str(error)
        super().__init__(f"Cannot connect to the relay socket {path}: {self.strerror}.")


class RelayPathMissing(NoRelayFound, FileNotFoundError):
    """The relay directory or socket does not exist (a ``FileNotFoundError`` too)."""

    def __init__(self, path: Path, directory: Path) -> None:
        self.path = path
        NoRelayFound.__init__(self, directory, f"{path} does not exist")
