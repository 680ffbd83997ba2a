"""Fixtures for the SDK tests.

Async tests are marked ``@pytest.mark.asyncio`` one by one, so they run under pytest-asyncio in
either ``strict`` or ``auto`` mode. Every wait is bounded (``timeout=``); nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pi_ask_sdk.testing import AckOrder, AskParams, FakeHost

ORDERS: tuple[AckOrder, ...] = ("completed_first", "ack_first")

TIMEOUT = 2.0
"""Upper bound of every wait in these tests; an in-process host answers immediately."""

MULTI_FORM: AskParams = {
    "title": "Plan",
    "questions": [
        {
            "id": "deploy",
            "label": "Deploy",
            "prompt": "Deploy now?",
            "options": [
                {"value": "yes", "label": "Ship it", "recommended": True},
                {"value": "no", "label": "Hold", "description": "wait for QA"},
            ],
        },
        {
            "id": "targets",
            "prompt": "Which targets?",
            "type": "multi",
            "options": [{"value": "eu"}, {"value": "us"}, {"value": "asia"}],
        },
        {
            "id": "layout",
            "prompt": "Pick a layout",
            "type": "preview",
            "options": [
                {"value": "grid", "preview": "[][]"},
                {"value": "list", "preview": "=="},
            ],
        },
    ],
}


@pytest.fixture(params=ORDERS)
def order(request: pytest.FixtureRequest) -> AckOrder:
    value: AckOrder = request.param
    return value


@pytest.fixture
def fake(order: AckOrder) -> Iterator[FakeHost]:
    """A fake host, once per acknowledgement order."""
    host = FakeHost(order=order)
    yield host
    if not host.session_ended:
        host.end_session()
