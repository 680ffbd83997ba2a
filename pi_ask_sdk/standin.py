"""Deprecated: the stand-in host moved to ``pi_ask_sdk.testing.standin`` (same names)."""

from __future__ import annotations

from ._moved import warn_moved_module
from .testing.standin import *  # noqa: F403
from .testing.standin import __all__ as __all__

warn_moved_module("pi_ask_sdk.standin", "pi_ask_sdk.testing.standin")
