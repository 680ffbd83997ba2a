"""Internal: ``RelayInfo``, what discovery finds (``pi_ask_sdk.transports.relay`` exports it);
here, beside no transport code, so that ``errors`` (``AmbiguousRelay``) can name it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path  # only annotations: `import pi_ask_sdk` need not load pathlib

__all__ = ["RelayInfo"]


@dataclass(frozen=True, slots=True)
class RelayInfo:
    """A relay socket of a live Pi process.

    ``forwarded`` marks a socket that forwards to a relay elsewhere (``ssh -L``), named
    ``pi-<label>.sock``: its ``pid`` is 0 (unknown here) until a hello tells it.
    """

    __module__ = "pi_ask_sdk.transports.relay"  # documented where users import it from

    pid: int
    path: Path
    forwarded: bool = False
