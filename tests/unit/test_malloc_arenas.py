"""``croupier serve`` caps glibc's malloc arenas, for itself and its worker processes."""

from __future__ import annotations

import os
import platform

import pytest

from api.malloc import ARENAS, limit_arenas

GLIBC = platform.libc_ver()[0] == "glibc"


def test_the_cap_is_set_for_this_process_and_for_the_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_arenas() is GLIBC

    assert os.environ["MALLOC_ARENA_MAX"] == str(ARENAS)


def test_an_operators_own_setting_is_kept_and_a_bad_one_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas() is GLIBC

    assert os.environ["MALLOC_ARENA_MAX"] == "4"
    monkeypatch.setenv("MALLOC_ARENA_MAX", "many")
    assert limit_arenas() is False
    assert os.environ["MALLOC_ARENA_MAX"] == "many"
