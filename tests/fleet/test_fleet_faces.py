"""The fleet's faces name themselves as the module of what they re-export, as every other face
does (tests/sdk/test_faces.py; these need nats-py to import, so they are checked here)."""

from __future__ import annotations

import pytest

from tests.sdk.test_faces import (
    public_modules,
)
from tests.sdk.test_faces import (
    test_every_exported_class_and_function_names_a_public_module_that_has_it as check_face,
)

FLEET_MODULES = [
    name
    for name in public_modules()
    if name.startswith(("pi_ask_sdk.fleet", "pi_ask_sdk.testing.fleet"))
]


def test_the_fleet_modules_are_found() -> None:
    assert "pi_ask_sdk.fleet" in FLEET_MODULES
    assert "pi_ask_sdk.testing.fleet" in FLEET_MODULES


@pytest.mark.parametrize("name", FLEET_MODULES)
def test_fleet_faces_name_a_public_module(name: str) -> None:
    check_face(name)
