"""``RelayInfo``: a relay socket that discovery finds (in a module of its own, which the
relay's errors can name without importing discovery)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path  # only annotations: importing RelayInfo need not load pathlib

__all__ = ["RelayInfo"]


@dataclass(frozen=True, slots=True)
class RelayInfo:
    """A relay socket of a live Pi process.

    ``forwarded`` marks a socket that forwards to a relay elsewhere (``ssh -L``), named
    ``pi-<label>.sock``: its ``pid`` is 0 (unknown here) until a hello tells it.
    """

    pid: int
    path: Path
    forwarded: bool = False
