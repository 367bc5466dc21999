"""A started server's thread switch interval (:mod:`ledger.switch_policy`): with
``switch_interval_ms`` the interpreter hands the GIL over after that long; without it
(``croupier serve``'s default, an embedding application, a test process) the
interpreter's interval is left alone; a negative one is refused at start."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from api.app import create_app
from api.cli import main as croupier
from ledger import switch_policy
from ledger.settings import Settings


@pytest.fixture
def interpreter_interval() -> Iterator[float]:
    """The interpreter's switch interval as it was, restored after the test."""
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def test_a_server_with_it_switches_threads_that_often(
    tmp_path: Path, interpreter_interval: float
) -> None:
    settings = Settings(data_dir=tmp_path, switch_interval_ms=0.25)
    with TestClient(create_app(settings=settings)) as client:
        assert client.get("/health").status_code == 200
        assert sys.getswitchinterval() == pytest.approx(0.00025)


def test_without_it_the_interpreters_interval_is_left_alone(
    tmp_path: Path, interpreter_interval: float
) -> None:
    sys.setswitchinterval(0.007)  # not the default, so "left alone" is seen
    with TestClient(create_app(settings=Settings(data_dir=tmp_path))) as client:
        assert client.get("/health").status_code == 200
        assert sys.getswitchinterval() == pytest.approx(0.007)


def test_a_negative_interval_is_refused(
    monkeypatch: pytest.MonkeyPatch, interpreter_interval: float
) -> None:
    monkeypatch.setenv("CROUPIER_SWITCH_INTERVAL_MS", "-1")
    with pytest.raises(ValidationError, match="CROUPIER_SWITCH_INTERVAL_MS: must be 0 or more"):
        Settings()
    with pytest.raises(ValueError, match="positive"):
        switch_policy.tune(-1)
    assert sys.getswitchinterval() == interpreter_interval


def test_croupier_serve_leaves_it_to_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` keeps the interpreter's interval (measured best for the table's
    decisions), and passes an operator's own value to its workers."""
    started: list[Settings] = []

    def refuse(settings: Settings, workers: int) -> str:
        started.append(settings)
        return "stopped by the test"

    for name in ("CROUPIER_GC_TUNED", "CROUPIER_SWITCH_INTERVAL_MS"):
        monkeypatch.setenv(name, "")  # recorded, so what serve sets is undone after
        monkeypatch.delenv(name)  # (test_gc_policy says why)
    monkeypatch.setattr("api.serve.workers_refused", refuse)
    assert croupier(["serve"]) == 2
    assert started[-1].switch_interval_ms == 0
    monkeypatch.setenv("CROUPIER_SWITCH_INTERVAL_MS", "0.5")
    assert croupier(["serve"]) == 2
    assert started[-1].switch_interval_ms == 0.5
