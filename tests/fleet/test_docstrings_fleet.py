"""The fleet's public names have docstrings, as every other documented module's do
(tests/test_docstrings.py; these need nats-py to resolve, so they are checked here)."""

from __future__ import annotations

import pytest

from tests.test_docstrings import NEEDS_NATS, undocumented


@pytest.mark.parametrize("module_name", NEEDS_NATS)
def test_fleet_names_have_docstrings(module_name: str) -> None:
    assert undocumented(module_name) == []
