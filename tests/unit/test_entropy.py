"""Random bytes read a block at a time (ledger/entropy.py): the OS CSPRNG's bytes, each
handed out once, never shared by two threads or two processes, zeroed once drawn."""

from __future__ import annotations

import os
import threading
import uuid
from collections import Counter

import pytest

from ledger import entropy


def test_it_gives_as_many_bytes_as_asked_across_block_ends() -> None:
    sizes = [0, 1, 12, 16, 32, entropy.BLOCK // 4, entropy.BLOCK // 4 + 1, entropy.BLOCK]
    for n in sizes * 20:
        assert len(entropy.token_bytes(n)) == n


def test_no_draw_repeats() -> None:
    draws = [entropy.token_bytes(16) for _ in range(3 * entropy.BLOCK)]
    assert len(set(draws)) == len(draws)


def test_bytes_are_uniform() -> None:
    data = b"".join(entropy.token_bytes(1000) for _ in range(256))
    counts = Counter(data)
    expected = len(data) / 256
    chi2 = sum((counts.get(b, 0) - expected) ** 2 / expected for b in range(256))
    # 255 degrees of freedom: above 370 happens by chance about once in a million runs;
    # bytes taken twice or a block handed out with its zeroed part would be far above
    assert chi2 < 370, chi2


def test_a_drawn_byte_is_zeroed_in_the_block() -> None:
    entropy.token_bytes(1)  # this thread's block exists
    block = entropy._block
    before = block.at
    entropy.token_bytes(24)
    if block.at == before + 24:  # not a fresh block (then the same holds from 0)
        assert block.data[: block.at] == bytes(block.at)
    assert block.data[block.at :] != bytes(len(block.data) - block.at)


def test_each_thread_draws_from_its_own_block() -> None:
    seen: list[bytes] = []
    lock = threading.Lock()

    def draw() -> None:
        mine = [entropy.token_bytes(16) for _ in range(500)]
        with lock:
            seen.extend(mine)

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == len(seen) == 2000


def test_a_forked_child_never_gets_its_parents_next_bytes() -> None:
    entropy.token_bytes(8)  # the parent's block holds bytes not yet drawn
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next bytes, to the parent
        try:
            os.write(write, entropy.token_bytes(32))
        finally:
            os._exit(0)
    os.close(write)
    child = os.read(read, 32)
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 32
    assert child != entropy.token_bytes(32)


def test_uuid4_is_a_random_uuid() -> None:
    ids = {entropy.uuid4() for _ in range(1000)}
    assert len(ids) == 1000
    for u in ids:
        assert u.version == 4
        assert u.variant == uuid.RFC_4122


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError):
        entropy.token_bytes(-1)
