"""Fixtures for the tests of the test tooling (``pi_ask_sdk.testing``: ``FakeHost``,
``check_transport``, the stand-in server, the real-Pi kit's install cache).

Async tests are marked ``@pytest.mark.asyncio`` one by one; every wait is bounded, nothing
sleeps. What needs a real Pi is in tests/integration.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pi_ask_sdk.testing import AckOrder, FakeHost

TIMEOUT = 2.0
"""Upper bound of every wait in these tests; an in-process host answers immediately."""


@pytest.fixture(params=("completed_first", "ack_first"))
def fake(request: pytest.FixtureRequest) -> Iterator[FakeHost]:
    """A fake host, once per acknowledgement order."""
    order: AckOrder = request.param
    host = FakeHost(order=order)
    yield host
    if not host.session_ended:
        host.end_session()
