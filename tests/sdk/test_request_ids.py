"""Default request ids: 128 random bits each, never shared with a forked child."""

from __future__ import annotations

import os

import pytest

from pi_ask_sdk._pending import SubmitBook


def test_default_ids_are_distinct_and_carry_128_random_bits() -> None:
    book = SubmitBook(8)
    ids = [book.request_id("bridge", None) for _ in range(1_000)]
    assert len(set(ids)) == len(ids)
    for rid in ids:
        prefix, _, hexdigits = rid.partition("-")
        assert prefix == "bridge"
        assert len(hexdigits) == 32
        int(hexdigits, 16)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
def test_a_forked_child_does_not_reuse_its_parents_random_bytes() -> None:
    book = SubmitBook(8)
    book.request_id("b", None)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave without running pytest's teardown
        try:
            os.write(write, book.request_id("b", None).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    parent = book.request_id("b", None)
    assert child.startswith("b-")
    assert child != parent
