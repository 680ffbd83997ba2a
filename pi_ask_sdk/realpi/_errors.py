r"""What goes wrong with a real Pi (both ``RuntimeError``\ s)."""

from __future__ import annotations

__all__ = ["PiFailed", "PiNotInstalled"]


class PiNotInstalled(RuntimeError):
    """The requested Pi flavour is not installed or cannot be (the message says why)."""


class PiFailed(RuntimeError):
    """Pi did not do what was expected in time (the message carries its stderr tail)."""
