"""Deprecated: the pytest plugin moved to ``pi_ask_sdk.testing.pytest_plugin``.

It is registered through the ``pytest11`` entry point, so naming it is rarely needed. A conftest
that still names this old path (``pytest_plugins = ["pi_ask_sdk.pytest_plugin"]``, or ``-p``)
gets a ``DeprecationWarning`` and the plugin once: this module holds no fixture or hook of its
own, it registers the real plugin (as ``pi_ask``, the entry point's name) only when the entry
point has not (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), and never against ``-p no:pi_ask``.
"""

from __future__ import annotations

import pytest

from ._moved import warn_moved_module
from .testing import pytest_plugin as _plugin

__all__ = ["pytest_addhooks"]

warn_moved_module("pi_ask_sdk.pytest_plugin", "pi_ask_sdk.testing.pytest_plugin")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the real plugin unless the entry point did (called as this shim registers)."""
    if pluginmanager.is_registered(_plugin) or pluginmanager.is_blocked("pi_ask"):
        return
    pluginmanager.register(_plugin, "pi_ask")
