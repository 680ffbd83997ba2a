"""Internal: ``ClientStream``, the async iterator behind ``BridgeClient.flows()`` / ``events()``."""

from __future__ import annotations

import asyncio
import weakref
from types import TracebackType
from typing import Generic, TypeVar

from typing_extensions import Self

from .errors import ConnectionLost, ConnectionLostReason, WaitTimeout

__all__ = ["ClientStream", "StreamEnd"]

T = TypeVar("T")


class StreamEnd:
    __slots__ = ("reason",)

    def __init__(self, reason: ConnectionLostReason) -> None:
        self.reason: ConnectionLostReason = reason


class ClientStream(Generic[T]):
    """An async iterator over what the client receives from the moment it was made.

    It starts with the forms open at that moment, then follows live events. It ends when the
    client closes or the connection is lost (``async for`` stops; ``next`` raises
    ``ConnectionLost``). Undelivered items are buffered; ``aclose()`` (or dropping the stream)
    stops buffering.
    """

    def __init__(self, owner: weakref.WeakSet[ClientStream[T]], first: list[T]) -> None:
        self._owner = owner
        self._queue: asyncio.Queue[T | StreamEnd] = asyncio.Queue()
        self._ended: StreamEnd | None = None
        for item in first:
            self._queue.put_nowait(item)
        owner.add(self)

    def _push(self, item: T | StreamEnd) -> None:
        if self._ended is None:
            self._queue.put_nowait(item)
            if isinstance(item, StreamEnd):
                self._ended = item
                self._owner.discard(self)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        if self._ended is not None and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, StreamEnd):
            raise StopAsyncIteration
        return item

    async def next(self, *, timeout: float) -> T:
        """The next item, waiting at most ``timeout`` seconds (``WaitTimeout`` after that)."""
        if not self._queue.empty():
            # Ready now: no timer. (On 3.12+ wait_for schedules one even for a ready item, and
            # a loop that never idles keeps every cancelled timer until it next runs.)
            item = self._queue.get_nowait()
            if not isinstance(item, StreamEnd):
                return item
            raise ConnectionLost(item.reason, "the stream has ended")
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise WaitTimeout("the next item of the stream", timeout) from None
        except StopAsyncIteration:
            reason = self._ended.reason if self._ended is not None else "closed"
            raise ConnectionLost(reason, "the stream has ended") from None

    async def aclose(self) -> None:
        self._push(StreamEnd("closed"))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
