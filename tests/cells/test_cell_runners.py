"""A cell whose store is down: its table runners keep trying every tick and log the
failure once per distinct error (``serve --cells`` runs one set of runners per cell, and
a cell may be down for minutes while the others play)."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from api.table_runners import TableRunners
from tests.integration.table_helpers import FakeClock


class DownRecorder:
    def __init__(self) -> None:
        self.calls = 0

    def max_notification_id(self) -> int:
        self.calls += 1
        raise OSError("connection refused")


class DownStore:
    def __init__(self) -> None:
        self.recorder = DownRecorder()


def test_a_store_that_is_down_is_logged_once_while_the_runners_keep_trying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store: Any = DownStore()
    runners = TableRunners(store, FakeClock(), interval=0.001)
    with caplog.at_level(logging.ERROR, logger="croupier.tables"):
        runners.start(name="croupier-tables-down")
        try:
            deadline = time.monotonic() + 30
            while runners.failures < 5:  # a wait for ticks, not a timing: 5 looks failed
                assert time.monotonic() < deadline, runners.failures
                time.sleep(0.01)
        finally:
            runners.stop()
    logged = [r for r in caplog.records if "looking for tables failed" in r.getMessage()]
    assert len(logged) == 1 and store.recorder.calls >= 5
