"""When the checkpoints are written (ledger/checkpoints.py): after every
``checkpoint_every`` commands, by the sealer's own thread while it runs (``croupier
serve``), so the writer that counted answers at once; in the thread that counted when no
sealer thread runs (an application used as a library)."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

from ledger.casino import Casino
from tests.conftest import Store


def _sealing_threads(app: Casino) -> list[str]:
    """Record the name of each thread that seals ``app``'s log from now on."""
    names: list[str] = []
    seal = app.sealer.seal

    def recorded(*args: Any, **kwargs: Any) -> Any:
        names.append(threading.current_thread().name)
        return seal(*args, **kwargs)

    app.sealer.seal = recorded  # type: ignore[method-assign]
    return names


def _checkpoints(app: Casino) -> int:
    latest = app.sealer.latest()
    return 0 if latest is None else latest.seq


def test_the_count_of_commands_wakes_the_sealers_thread_not_the_writer(
    store: Store,
) -> None:
    app = store.open(checkpoint_every=3)
    app.open_account("o0", "pia", "EUR")
    app.seal()
    before = _checkpoints(app)
    names = _sealing_threads(app)
    app.sealer.start(3600.0)  # its timer never fires in this test: only the count does
    try:
        deadline = time.monotonic() + 10
        while app.sealer.last_ok is None and time.monotonic() < deadline:
            time.sleep(0.02)  # the thread's first tick, at its start
        assert names == ["croupier-sealer"] and _checkpoints(app) == before  # nothing new
        names.clear()
        for i in range(2):  # the account's opening was the first command counted
            app.deposit(f"d{i}", "pia", 100)
        deadline = time.monotonic() + 10
        while _checkpoints(app) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _checkpoints(app) == before + 1
        assert names == ["croupier-sealer"]  # woken by the third command
    finally:
        app.sealer.stop()
    app.deposit("d2", "pia", 100)
    assert _checkpoints(app) == before + 1  # the count starts again


def test_without_the_sealers_thread_the_thread_that_counted_seals(store: Store) -> None:
    app = store.open(checkpoint_every=3)
    app.open_account("o0", "pia", "EUR")  # the first command counted
    app.seal()
    before = _checkpoints(app)
    names = _sealing_threads(app)
    app.deposit("d0", "pia", 100)
    assert names == [] and _checkpoints(app) == before
    app.deposit("d1", "pia", 100)  # the third
    assert names == [threading.current_thread().name]
    assert _checkpoints(app) == before + 1


def test_a_row_the_sealer_refuses_fails_no_command_that_counted(sqlite_store: Store) -> None:
    """The seal the count asks for runs in the sealer's thread: a row it refuses is the
    sealer's error (/health, the log), not the error of the committed command that
    happened to be the thousandth (before, the writer sealed and that command, already
    written, was answered with the refusal)."""
    app = sqlite_store.open(checkpoint_every=3)
    app.open_account("o0", "pia", "EUR")
    app.seal()
    app.sealer.start(3600.0)
    try:
        deadline = time.monotonic() + 10
        while app.sealer.last_ok is None and time.monotonic() < deadline:
            time.sleep(0.02)
        # An upper-case copy of a row: a non-canonical row the sealer must refuse.
        conn = sqlite3.connect(sqlite_store.data_dir / "casino.sqlite", isolation_level=None)
        conn.execute(
            "INSERT INTO stored_events SELECT upper(originator_id), originator_version, topic, "
            "state FROM stored_events WHERE rowid = (SELECT max(rowid) FROM stored_events)"
        )
        conn.close()
        app.deposit("d0", "pia", 100)
        moved = app.deposit("d1", "pia", 100)  # the third command counted: a seal is due
        assert moved.balance == 200
        while app.sealer.last_error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert app.sealer.last_error is not None and "non-canonical" in app.sealer.last_error
    finally:
        app.sealer.stop()
