"""Random bytes from the OS CSPRNG with the GIL kept (ledger/entropy.py): as many as
asked for, uniform, never repeated; a short read is completed; without ``os.getrandom``,
``os.urandom``."""

from __future__ import annotations

import os
import uuid
from collections import Counter

import pytest

from ledger import entropy


def test_it_gives_as_many_bytes_as_asked() -> None:
    for n in [0, 1, 12, 16, 32, 256, 257, 4096]:
        assert len(entropy.token_bytes(n)) == n


def test_no_draw_repeats() -> None:
    draws = [entropy.token_bytes(16) for _ in range(10_000)]
    assert len(set(draws)) == len(draws)


def test_bytes_are_uniform() -> None:
    data = b"".join(entropy.token_bytes(1000) for _ in range(256))
    counts = Counter(data)
    expected = len(data) / 256
    chi2 = sum((counts.get(b, 0) - expected) ** 2 / expected for b in range(256))
    # 255 degrees of freedom: above 370 happens by chance about once in a million runs
    assert chi2 < 370, chi2


def test_a_short_read_is_completed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.getrandom
    calls: list[int] = []

    def short(n: int, flags: int = 0) -> bytes:
        calls.append(n)
        return real(min(n, 5), flags)

    monkeypatch.setattr(os, "getrandom", short)
    assert len(entropy.token_bytes(32)) == 32
    assert calls == [32, 27, 22, 17, 12, 7, 2]


def test_without_getrandom_it_is_urandom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "getrandom")
    monkeypatch.setattr(os, "urandom", lambda n: b"u" * n)
    assert entropy.token_bytes(3) == b"uuu"


def test_uuid4_is_a_random_uuid() -> None:
    ids = {entropy.uuid4() for _ in range(1000)}
    assert len(ids) == 1000
    for u in ids:
        assert u.version == 4
        assert u.variant == uuid.RFC_4122


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError):
        entropy.token_bytes(-1)
