from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from .fake_relay import FakeRelay


@pytest_asyncio.fixture
async def relay(tmp_path: Path) -> AsyncIterator[FakeRelay]:
    """A Python relay (real Unix socket, real FlowHost behind it), stopped after the test."""
    server = FakeRelay(tmp_path / "relays")
    await server.start()
    yield server
    await server.stop()
