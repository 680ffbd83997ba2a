r"""What goes wrong with a real Pi: ``PiNotInstalled`` and ``PiFailed``, defined with every other
error in ``pi_ask_sdk.errors`` (``BridgeError``\ s that are ``RuntimeError``\ s too)."""

from __future__ import annotations

from pi_ask_sdk.errors import PiFailed, PiInstallProblem, PiNotInstalled

__all__ = ["PiFailed", "PiInstallProblem", "PiNotInstalled"]
