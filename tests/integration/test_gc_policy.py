"""A started server's garbage collector (:mod:`ledger.gc_policy`): with ``gc_tuned`` (what
``croupier serve`` sets for its workers) the start-up's objects are frozen and the
thresholds are the server's; without it (an embedding application, a test process) the
interpreter's are left alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as croupier
from ledger import gc_policy
from ledger.settings import Settings


@pytest.fixture
def interpreter_gc() -> Iterator[tuple[int, int, int]]:
    """The interpreter's collector as it was, restored after the test."""
    before = gc.get_threshold()
    gc.unfreeze()
    yield before
    gc.unfreeze()
    gc.set_threshold(*before)


def test_a_tuned_server_freezes_its_start_and_collects_less_often(
    tmp_path: Path, interpreter_gc: tuple[int, int, int]
) -> None:
    settings = Settings(data_dir=tmp_path, gc_tuned=True)
    with TestClient(create_app(settings=settings)) as client:
        assert client.get("/health").status_code == 200
        assert gc.get_threshold() == gc_policy.THRESHOLDS
        assert gc.get_freeze_count() > 0


def test_without_it_the_interpreters_collector_is_left_alone(
    tmp_path: Path, interpreter_gc: tuple[int, int, int]
) -> None:
    with TestClient(create_app(settings=Settings(data_dir=tmp_path))) as client:
        assert client.get("/health").status_code == 200
        assert gc.get_threshold() == interpreter_gc
        assert gc.get_freeze_count() == 0


def test_croupier_serve_turns_it_on_for_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` sets the default its workers read, and keeps an operator's own value."""
    started: list[Settings] = []

    def refuse(settings: Settings, workers: int) -> str:
        started.append(settings)
        return "stopped by the test"

    # Recorded first, so that what serve sets is undone after the test: a bare delenv
    # of an unset variable records nothing, and serve's value leaked into every later
    # test of the process (their servers tuned this process's collector).
    monkeypatch.setenv("CROUPIER_GC_TUNED", "")
    monkeypatch.delenv("CROUPIER_GC_TUNED")
    monkeypatch.setattr("api.serve.workers_refused", refuse)
    assert croupier(["serve"]) == 2
    assert started[-1].gc_tuned is True
    monkeypatch.setenv("CROUPIER_GC_TUNED", "false")
    assert croupier(["serve"]) == 2
    assert started[-1].gc_tuned is False
