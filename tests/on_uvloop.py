"""Run a test's coroutine on a uvloop event loop, bounded.

uvloop's transports, servers and timer handles are not instances of asyncio's classes, and it
schedules I/O callbacks in its own order: code that leans on the stdlib loop's concrete classes
or ordering fails only there. The uvloop tests are plain sync tests that run their coroutine
with ``uvloop.run`` (on every Python the project supports, and with any pytest-asyncio), so the
loop is chosen for them alone. A module imports this after
``pytest.importorskip("uvloop")``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import uvloop

__all__ = ["run_on_uvloop"]

T = TypeVar("T")


def run_on_uvloop(main: Callable[[], Awaitable[T]], timeout: float) -> T:
    """``main()`` on a fresh uvloop loop, failing after ``timeout`` seconds; checks the loop
    really is uvloop's (a policy or a wrapper could hand out another)."""

    async def bounded() -> T:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        return await asyncio.wait_for(main(), timeout)

    return uvloop.run(bounded())
