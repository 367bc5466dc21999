"""The sealer takes the rows this process wrote from its event store (ledger/written.py)
and reads from the store only the rows it was not handed: another process's, and any an
insider added. The checkpoint is the same as one over the rows read back."""

from __future__ import annotations

from typing import Any

from audit_cli.verify import verify_db
from ledger import contracts, merkle
from ledger.written import Written
from tests.conftest import Store
from tests.integration.test_sealer_thread import _rows_opened


def _root_over_the_store(store: Store, cp: dict[str, Any]) -> str:
    """The root of a tree over the stored rows the checkpoint covers, each read and opened
    by a process that wrote none of them."""
    reader = store.open()
    rows = reader.recorder.select_notifications(
        start=1, limit=10**6, stop=int(cp["last_notification_id"])
    )
    leaves = [merkle.leaf_hash(reader.mapper.open(note)[2]) for note in rows]  # type: ignore[attr-defined]
    assert len(leaves) == int(cp["tree_size"])
    return merkle.IncrementalTree().extend(leaves).root().hex()


def test_a_seal_reads_none_of_its_own_rows_and_covers_the_log(store: Store) -> None:
    app = store.open()
    app.open_account("o0", "pia", "EUR")
    for i in range(30):
        app.deposit(f"d{i}", "pia", 100)
    sid = app.open_session("s0", "pia", 2_000).session_id
    for i in range(5):  # saves of several events each: their ids in the order of their rows
        if app.red_dog_bet(f"b{i}", sid, 100).status == "open":
            app.red_dog_see(f"v{i}", sid)
    every = [n.id for n in app.recorder.select_notifications(start=1, limit=1000)]
    assert app.recorder.select_ids(0, 1000) == every  # type: ignore[attr-defined]
    assert app.recorder.select_ids(every[4], 3) == every[5:8]  # type: ignore[attr-defined]
    opened = _rows_opened(app)
    cp = app.seal()
    assert cp is not None
    assert opened == []  # every row was handed over by the event store
    # each forgotten once covered; held now: the checkpoint's own row, for the next one
    written = app.sealer.written
    assert written is not None and len(written) == 1
    (row,) = written.take([app.recorder.max_notification_id() or 0])
    assert row is not None and row.topic == contracts.CHECKPOINT_SEALED
    # the same root as a tree over the rows as stored, and verify agrees
    assert cp["root_hash"] == _root_over_the_store(store, cp)
    report = verify_db(store.db, store.keyring.public_keys, jobs=1)
    assert not report.findings, report.findings


def test_rows_another_process_wrote_are_read_and_opened(store: Store) -> None:
    mine, other = store.open(), store.open()
    mine.open_account("o0", "pia", "EUR")
    first = mine.seal()
    assert first is not None
    before = mine.recorder.max_notification_id() or 0
    other.deposit("theirs", "pia", 100)
    theirs = list(range(before + 1, (mine.recorder.max_notification_id() or 0) + 1))
    mine.deposit("mine", "pia", 100)
    opened = _rows_opened(mine)
    cp = mine.seal()
    assert cp is not None
    assert opened == theirs  # only the other process's rows: its deposit
    assert cp["root_hash"] == _root_over_the_store(store, cp)


def test_a_sealer_that_follows_another_forgets_what_that_one_covered(store: Store) -> None:
    holder, other = store.open(), store.open()
    other.sealer.on_duty = lambda: False
    other.open_account("o0", "pia", "EUR")
    other.deposit("d0", "pia", 100)
    assert len(other.sealer.written or ()) > 0
    holder.sealer.tick()  # on duty: seals every row, the other's too (read from the store)
    other.sealer.tick()  # off duty: learns the holder's checkpoint, forgets what it covers
    assert len(other.sealer.written or ()) == 0


def test_written_holds_at_most_its_bound_and_drops_the_oldest() -> None:
    written = Written(most=3)
    written.add([1, 2, 3], [b"a", b"b", b"c"], "k", ["t"] * 3)
    written.add([4, 5], [b"d", b"e"], "k", ["t"] * 2)
    assert len(written) == 3
    first, third, fifth = written.take([1, 3, 5])
    assert first is None  # dropped: the sealer reads that row from the store
    assert third is not None and third.event_hash == b"c"
    assert fifth is not None and fifth.kid == "k"
    assert written.take([3]) == [None]  # taken once
    written.forget_through(4)
    assert len(written) == 0
