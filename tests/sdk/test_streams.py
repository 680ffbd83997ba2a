"""The client's streams: dropped or ended streams are forgotten, the others keep receiving."""

from __future__ import annotations

import gc

import pytest

from pi_ask_sdk import ConnectionLost
from pi_ask_sdk._streams import ClientStream, StreamEnd, StreamSet

from .conftest import TIMEOUT


@pytest.mark.asyncio
@pytest.mark.parametrize("leaving", ["dropped", "closed"])
async def test_a_stream_that_left_is_forgotten_and_the_others_still_receive(leaving: str) -> None:
    streams: StreamSet[int] = StreamSet()
    first = ClientStream(streams, [])
    middle = ClientStream(streams, [])
    last = ClientStream(streams, [])
    assert len(streams) == 3
    streams.push(0)
    if leaving == "dropped":
        del middle
        gc.collect()
    else:
        await middle.aclose()
        assert [item async for item in middle] == [0]
    assert len(streams) == 2
    late = ClientStream(streams, [])  # joins after the first push
    streams.push(1)
    assert [await first.next(timeout=TIMEOUT) for _ in range(2)] == [0, 1]
    assert [await last.next(timeout=TIMEOUT) for _ in range(2)] == [0, 1]
    assert await late.next(timeout=TIMEOUT) == 1


@pytest.mark.asyncio
async def test_an_end_reaches_every_stream_though_each_leaves_the_set_meanwhile() -> None:
    streams: StreamSet[int] = StreamSet()
    readers = [ClientStream(streams, [0]) for _ in range(3)]
    streams.push(StreamEnd("disconnected"))
    assert not streams
    streams.push(1)  # nobody left to receive it
    for reader in readers:
        assert await reader.next(timeout=TIMEOUT) == 0
        with pytest.raises(ConnectionLost) as lost:
            await reader.next(timeout=TIMEOUT)
        assert lost.value.reason == "disconnected"
