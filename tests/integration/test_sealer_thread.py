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


def _rows_opened(app: Casino) -> list[int]:
    """Record the notification id of each row of the log ``app`` opens from now on (an
    aggregate's own events, which have none, are not counted)."""
    opened: list[int] = []
    mapper: Any = app.mapper
    open_ = mapper.open

    def counted(row: Any) -> Any:
        if hasattr(row, "id"):
            opened.append(row.id)
        return open_(row)

    mapper.open = counted
    return opened


def test_a_worker_that_seals_after_another_starts_from_the_others_checkpoint(
    store: Store,
) -> None:
    """Two processes on one log take turns sealing (the fence); one that seals after the
    other reads only the rows after the other's checkpoint, not every row since its own
    last one (each read again was a verified signature and a hash, and the checkpoint
    written from them collided on its number)."""
    one, two = store.open(), store.open()
    one.open_account("o0", "pia", "EUR")
    assert two.seal() is not None  # the second process seals first: it holds its state
    for i in range(20):
        one.deposit(f"d{i}", "pia", 100)
    first = one.seal()
    assert first is not None
    one.deposit("last", "pia", 100)
    opened = _rows_opened(two)
    second = two.seal()
    assert second is not None and second["seq"] == first["seq"] + 1
    # only what came after the first process's checkpoint: its own row and the deposit's
    assert opened and min(opened) > int(first["last_notification_id"])
    assert second["tree_size"] == int(first["tree_size"]) + len(opened)


def test_a_sealer_off_duty_writes_nothing_and_follows_the_one_on_duty(store: Store) -> None:
    """With several workers only the holder of the runners' lease seals on its timer
    (ledger.runner_lease); another's tick writes no checkpoint and learns the holder's."""
    holder, other = store.open(), store.open()
    other.sealer.on_duty = lambda: False
    holder.open_account("o0", "pia", "EUR")
    other.deposit("d0", "pia", 100)
    other.sealer.tick()
    assert _checkpoints(holder) == 0 and other.sealer.newest is None
    assert other.sealer.last_error is None and other.sealer.last_ok is not None
    for i in range(3):  # three checkpoints, each over the other worker's deposits too
        other.deposit(f"d{i + 1}", "pia", 100)
        holder.sealer.tick()
    assert _checkpoints(holder) == 3
    opened = _rows_opened(other)
    other.sealer.tick()
    assert _checkpoints(holder) == 3  # nothing written off duty
    assert opened == []  # and no row read: only the checkpoints' numbers looked up
    assert other.sealer.newest == holder.sealer.newest
    # back on duty (the lease passed to it): it seals from the holder's newest checkpoint
    other.sealer.on_duty = lambda: True
    other.deposit("d9", "pia", 100)
    other.sealer.tick()
    assert _checkpoints(holder) == 4
    assert other.sealer.newest is not None and other.sealer.newest["seq"] == 4
