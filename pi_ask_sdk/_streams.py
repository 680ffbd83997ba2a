"""Internal: ``ClientStream``, the async iterator behind ``BridgeClient.flows()`` / ``events()``."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from types import TracebackType
from typing import Generic, TypeVar

from typing_extensions import Self

from .errors import ConnectionLost, ConnectionLostReason, WaitTimeout

__all__ = ["ClientStream", "StreamEnd", "StreamSet"]

T = TypeVar("T")


class StreamEnd:
    __slots__ = ("reason",)

    def __init__(self, reason: ConnectionLostReason) -> None:
        self.reason: ConnectionLostReason = reason


class StreamSet(Generic[T]):
    """The client's live streams of one kind, held weakly: a stream its reader dropped is
    forgotten."""

    __slots__ = ("_streams",)

    def __init__(self) -> None:
        self._streams: weakref.WeakSet[ClientStream[T]] = weakref.WeakSet()

    def add(self, stream: ClientStream[T]) -> None:
        self._streams.add(stream)

    def discard(self, stream: ClientStream[T]) -> None:
        self._streams.discard(stream)

    def __bool__(self) -> bool:
        return bool(self._streams)

    def __len__(self) -> int:
        return len(self._streams)

    def push(self, item: T | StreamEnd) -> None:
        """Deliver ``item`` to every live stream."""
        for stream in list(self._streams):  # a copy: a stream that ends discards itself
            stream._push(item)


class ClientStream(Generic[T]):
    """An async iterator over what the client receives from the moment it was made.

    It starts with the forms open at that moment, then follows live events. It ends when the
    client closes or the connection is lost (``async for`` stops; ``next`` raises
    ``ConnectionLost``). Undelivered items are buffered; ``aclose()`` (or dropping the stream)
    stops buffering.
    """

    # A deque and the futures of waiting readers, rather than an asyncio.Queue: a bridge's loop
    # takes every item and nobody joins the stream, so the queue's bookkeeping (unfinished
    # tasks, the join event, putters) would be done on every hand-over for nothing.
    __slots__ = ("__weakref__", "_ended", "_getters", "_items", "_owner")

    def __init__(self, owner: StreamSet[T], first: list[T]) -> None:
        self._owner = owner
        self._items: deque[T | StreamEnd] = deque(first)
        self._getters: deque[asyncio.Future[None]] = deque()
        self._ended: StreamEnd | None = None
        owner.add(self)

    def _push(self, item: T | StreamEnd) -> None:
        if self._ended is None:
            self._items.append(item)
            if isinstance(item, StreamEnd):
                self._ended = item
                self._owner.discard(self)
            if self._getters:
                self._wake_one()

    def _wake_one(self) -> None:
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        items = self._items
        if self._ended is not None and not items:
            raise StopAsyncIteration
        while not items:
            getter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(getter)
                if items and not getter.cancelled():
                    self._wake_one()  # woken, then cancelled: pass the item on
                raise
        item = items.popleft()
        if isinstance(item, StreamEnd):
            raise StopAsyncIteration
        return item

    async def next(self, *, timeout: float) -> T:
        """The next item, waiting at most ``timeout`` seconds.

        Args:
            timeout: Seconds to wait for an item.

        Raises:
            WaitTimeout: No item came within ``timeout`` (the stream goes on).
            ConnectionLost: The stream has ended (the client closed or the connection is gone).
        """
        items = self._items
        if items:
            # Ready now: no timer. (On 3.12+ wait_for schedules one even for a ready item, and
            # a loop that never idles keeps every cancelled timer until it next runs.)
            item = items.popleft()
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
        """End the stream: nothing more is buffered, and iteration stops."""
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
