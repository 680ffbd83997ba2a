"""pytest fixtures for bridge authors (registered through the ``pytest11`` entry point).

* ``pi_ask_order``: ``"completed_first"`` (the reference order) by default; parametrize it to run
  a test with both orders: ``@pytest.mark.parametrize("pi_ask_order", ["completed_first",
  "ack_first"])``.
* ``pi_ask_host``: a fresh ``FakeHost`` using that order.
* ``pi_ask_client``: a ``BridgeClient`` on that host, **not yet opened**, so the fixture needs no
  async plugin: in an async test (pytest-asyncio, anyio, ...) write
  ``async with pi_ask_client as client: ...``; in a plain test, ``asyncio.run`` a coroutine that
  does the same.
* ``pi_ask_sync_client``: a started ``SyncBridgeClient`` on that host (its own loop thread).

Nothing here imports an async test plugin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .client import BridgeClient
from .sync import SyncBridgeClient
from .testing import AckOrder, FakeHost

__all__ = ["pi_ask_client", "pi_ask_host", "pi_ask_order", "pi_ask_sync_client"]


@pytest.fixture
def pi_ask_order() -> AckOrder:
    """Which of ``completed`` / ``submit-result`` the fake host emits first."""
    return "completed_first"


@pytest.fixture
def pi_ask_host(pi_ask_order: AckOrder) -> Iterator[FakeHost]:
    host = FakeHost(order=pi_ask_order)
    yield host
    if not host.session_ended:
        host.end_session()


@pytest.fixture
def pi_ask_client(pi_ask_host: FakeHost) -> BridgeClient:
    return pi_ask_host.client()


@pytest.fixture
def pi_ask_sync_client(pi_ask_host: FakeHost) -> Iterator[SyncBridgeClient]:
    with pi_ask_host.sync_client() as client:
        yield client
