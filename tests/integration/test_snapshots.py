"""Signed snapshots: a long session loads from its snapshot after a restart; a snapshot
that does not verify is refused and the events are replayed (never trusted); the state
loaded from a snapshot equals the live state and the replay of every event."""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import IntegrityError

from ledger.accounts import Account, GameSession, account_id_for
from ledger.casino import Casino
from ledger.snapshots import SignedSnapshot
from tests.conftest import Store
from tests.helpers import open_session
from tests.integration.snapshot_helpers import (
    RawSnapshots,
    alter_balance,
    long_session,
    refused,
    state,
)
from tests.money import credit_win, stake

EVERY = 5


def _played(store: Store) -> tuple[str, dict[str, Any]]:
    """A session of 12 stake/win commands (snapshots every 5 events); its live state."""
    app = store.open(snapshot_every=EVERY)
    sid = open_session(app, "ann", buy_in=5_000)
    for i in range(12):
        stake(app, f"s{i}", sid, f"r{i}", 100)
        if i % 3 == 0:
            credit_win(app, f"w{i}", sid, f"r{i}", 250)
    live = state(app.get_session(sid))
    assert app.snapshotter is not None and app.snapshotter.taken == 3  # v5, v10, v15 of 17
    app.close()
    return sid, live


class ReadCounter:
    """Counts the event rows the application reads, per aggregate (a spy on the recorder)."""

    def __init__(self, app: Casino) -> None:
        self.rows: dict[UUID, int] = {}
        inner = app.recorder.select_events

        def counting(originator_id: Any, **kwargs: Any) -> Any:
            found = inner(originator_id, **kwargs)
            oid = originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))
            self.rows[oid] = self.rows.get(oid, 0) + len(found)
            return found

        app.recorder.select_events = counting  # type: ignore[method-assign]


def test_a_session_with_20000_rounds_loads_from_its_snapshot_after_a_restart(
    store: Store,
) -> None:
    app = store.open()
    sid, events = long_session(app, rounds=20_000)
    assert events >= 60_000
    app.red_dog_bet("after-1", sid, 100)  # real commands after the last snapshot
    rnd = app.open_round(sid)
    if rnd is not None:
        app.red_dog_see("after-2", sid)
    live = state(app.get_session(sid))
    app.close()

    restarted = store.open()
    reads = ReadCounter(restarted)
    restarted.red_dog_bet("first-after-restart", sid, 100)
    session_id = UUID(sid)
    # Only the events after the snapshot (fewer than the interval) and the one it
    # summarises were read, not the session's 70,000.
    assert 0 < reads.rows[session_id] <= restarted.settings.snapshot_every + 1
    assert refused(restarted) == 0
    if restarted.open_round(sid) is not None:
        restarted.red_dog_see("second-after-restart", sid)
    again = store.open()
    after = state(again.get_session(sid))
    assert after["_version"] > live["_version"]
    stored = list(again.snapshots.get(session_id, desc=True, limit=1))  # type: ignore[union-attr]
    assert stored and stored[0].originator_version > events - 100


def test_state_loaded_from_a_snapshot_equals_live_and_full_replay(store: Store) -> None:
    sid, live = _played(store)
    from_snapshot = store.open(snapshot_every=EVERY)
    replay_only = store.open(snapshot_every=0)  # reads no snapshot at all
    assert replay_only.snapshots is None
    assert state(from_snapshot.get_session(sid)) == live == state(replay_only.get_session(sid))
    account = account_id_for("ann")
    assert state(from_snapshot.repository.get(account)) == state(
        replay_only.repository.get(account)
    )
    stored = list(from_snapshot.snapshots.get(UUID(sid), desc=True, limit=1))  # type: ignore[union-attr]
    assert stored and isinstance(stored[0], SignedSnapshot)
    assert stored[0].originator_version == live["_version"] // EVERY * EVERY


def test_an_altered_snapshot_is_refused_and_the_events_replayed(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    sid, live = _played(store)
    raw = RawSnapshots(store)
    newest = raw.newest(sid)
    raw.set_state(sid, newest[0], alter_balance(newest[1], 1_000_000))
    raw.close()
    app = store.open(snapshot_every=EVERY)
    with caplog.at_level(logging.ERROR, logger="croupier.snapshots"):
        loaded = state(app.get_session(sid))
    assert loaded == live  # not the altered balance: the events were replayed
    assert refused(app) == 1
    assert any("refused the snapshot" in r.getMessage() for r in caplog.records)


def test_the_snapshot_after_a_refused_one_is_taken_and_verifies(store: Store) -> None:
    sid, live = _played(store)
    raw = RawSnapshots(store)
    newest = raw.newest(sid)
    raw.set_state(sid, newest[0], alter_balance(newest[1], 7))
    raw.close()
    app = store.open(snapshot_every=EVERY)
    for i in range(EVERY):
        stake(app, f"more-{i}", sid, f"more-{i}", 1)
    expected = live["balance"] - EVERY
    fresh = store.open(snapshot_every=EVERY)
    assert fresh.session_balance(sid) == expected
    assert refused(fresh) == 0


class UnencodableMapper:
    """A mapper that cannot transcode anything (a fake for the snapshotter's store)."""

    def to_stored_event(self, _: Any) -> Any:
        raise TypeError("cannot encode")


class StoreWithoutMapper:
    mapper = UnencodableMapper()


def test_a_snapshot_that_cannot_be_made_never_fails_the_command(store: Store) -> None:
    app = store.open(snapshot_every=1)
    sid = open_session(app, "bo", buy_in=1_000)
    assert app.snapshotter is not None
    app.snapshotter.store = StoreWithoutMapper()  # type: ignore[assignment]
    result = stake(app, "st", sid, "r", 10)
    assert result["balance"] == 990
    assert store.open().session_balance(sid) == 990


def test_a_snapshot_is_written_in_its_events_transaction(store: Store) -> None:
    # A save that fails (a version conflict) writes no snapshot: the snapshot at that
    # version is the committed state's, never the losing writer's.
    app = store.open(snapshot_every=1)
    sid = open_session(app, "di", buy_in=1_000)
    stale: GameSession = app.repository.get(UUID(sid))
    stake(app, "st", sid, "r", 10)  # commits the next version and its snapshot
    stale.stake("other", 500)
    with pytest.raises(IntegrityError):
        app.save(stale)
    raw = RawSnapshots(store)
    versions = dict(raw.versions(sid))
    raw.close()
    fresh = store.open(snapshot_every=1)
    snap = list(fresh.snapshots.get(UUID(sid), desc=True, limit=1))  # type: ignore[union-attr]
    assert snap[0].originator_version == stale.version == max(versions)
    assert snap[0].state["balance"] == 990 == fresh.session_balance(sid)


def test_accounts_and_sessions_are_snapshotted_rounds_are_not(store: Store) -> None:
    app = store.open(snapshot_every=1)
    sid = open_session(app, "cy", buy_in=1_000)
    stake(app, "st", sid, "r", 10)
    raw = RawSnapshots(store)
    kinds = raw.aggregates()
    raw.close()
    assert UUID(sid) in kinds and account_id_for("cy") in kinds
    loaded = store.open(snapshot_every=1)
    assert isinstance(loaded.repository.get(account_id_for("cy")), Account)
    assert isinstance(loaded.repository.get(UUID(sid)), GameSession)
    assert len(kinds) == 2  # no request record, no round
