"""Deprecated: the real-Pi kit moved to ``pi_ask_sdk.testing.realpi`` (same names)."""

from __future__ import annotations

from ._moved import warn_moved_module
from .testing.realpi import *  # noqa: F403
from .testing.realpi import __all__ as __all__

warn_moved_module("pi_ask_sdk.realpi", "pi_ask_sdk.testing.realpi")
