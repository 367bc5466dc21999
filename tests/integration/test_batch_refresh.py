"""A batch that collides on aggregates another process changed reruns from its cache
refreshed in a few queries (``Casino.refresh``, ``SigningEventStore.newer``), not from a
read of each aggregate: a tables process settling seats a front wrote to. What it reads
is verified as every read is; a tampered newer row is refused, and the batch then reads
each aggregate itself, as before."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from ledger.accounts import Account, account_id_for
from ledger.results import AccountMoved
from ledger.store import TamperDetected
from tests.conftest import Store
from tests.integration.test_group_commit import funded, writer_held
from tests.integration.test_tamper import Raw

PLAYERS = [f"r{i}" for i in range(12)]


def _reads_of(app: Any, ids: set[UUID]) -> list[UUID]:
    """Records the store's one-aggregate reads of ``ids`` (returns the list it fills)."""
    seen: list[UUID] = []
    recorder = app.recorder
    select = recorder.select_events

    def counted(originator_id: Any, *args: Any, **kwargs: Any) -> Any:
        if UUID(str(originator_id)) in ids:
            seen.append(UUID(str(originator_id)))
        return select(originator_id, *args, **kwargs)

    recorder.select_events = counted
    return seen


def test_a_batch_on_aggregates_another_process_changed_reruns_from_the_refreshed_cache(
    store: Store,
) -> None:
    front, tables = store.open(), store.open()  # two processes' applications, one log
    for p in PLAYERS:
        funded(front, p, 100)
    for p in PLAYERS:
        assert tables.account_balance(p) == 100  # cached in the second process
    for p in PLAYERS:
        front.deposit(f"more-{p}", p, 10)  # the second process's copies are now stale
    ids = {account_id_for(p) for p in PLAYERS}
    reads = _reads_of(tables, ids)
    before = tables.fallbacks
    with writer_held(tables) as submit:
        for p in PLAYERS:
            outcomes = submit(lambda p=p: tables.deposit(f"late-{p}", p, 1))
    assert outcomes == [AccountMoved(player_id=p, balance=111) for p in PLAYERS]
    assert tables.fallbacks == before + 1  # one collision, then the refreshed rerun
    assert reads == []  # no aggregate read on its own: the refresh read them together
    for p in PLAYERS:
        assert front.account_balance(p) == 111
        cached = tables.cached(account_id_for(p))
        assert isinstance(cached, Account) and cached.balance == 111


def test_refresh_leaves_an_aggregate_nothing_changed_as_it_was(store: Store) -> None:
    front, tables = store.open(), store.open()
    funded(front, "ria", 100)
    funded(front, "sol", 100)
    assert tables.account_balance("ria") == tables.account_balance("sol") == 100
    ria, sol = account_id_for("ria"), account_id_for("sol")
    kept = tables.cached(sol)
    front.deposit("more", "ria", 5)
    tables.refresh([ria, sol, account_id_for("nobody")])
    assert tables.cached(sol) is kept  # nothing newer: the same object
    refreshed = tables.cached(ria)
    assert isinstance(refreshed, Account) and refreshed.balance == 105
    assert refreshed.version == front.find(Account, ria).version


def test_refresh_reads_an_aggregate_not_cached_whole(store: Store) -> None:
    front, tables = store.open(), store.open()
    funded(front, "tia", 100)
    front.deposit("more", "tia", 7)
    tia, nobody = account_id_for("tia"), account_id_for("nobody")
    assert tables.cached(tia) is None
    tables.refresh([tia, nobody])
    got = tables.cached(tia)
    assert isinstance(got, Account) and got.balance == 107
    assert got.version == front.find(Account, tia).version
    assert tables.cached(nobody) is None  # no events: nothing cached


def test_a_tampered_newer_row_is_refused_and_the_batch_reads_each_aggregate(
    store: Store,
) -> None:
    front, tables = store.open(), store.open()
    funded(front, "ria", 100)
    assert tables.account_balance("ria") == 100
    front.deposit("more", "ria", 5)
    raw = Raw(store)
    try:
        (n, state), *_ = raw.q(
            "SELECT {id}, state FROM {t} WHERE topic LIKE ? ORDER BY {id} DESC",
            "%deposited%",
        )
        flipped = bytearray(state)
        flipped[-5] ^= 0x01
        raw.q("UPDATE {t} SET state = ? WHERE {id} = ?", bytes(flipped), n)
    finally:
        raw.close()
    ria = account_id_for("ria")
    cached = tables.cached(ria)
    with pytest.raises(TamperDetected):
        tables.refresh([ria])
    assert tables.cached(ria) is cached  # nothing applied
    # in a batch: the refresh fails, each command reads for itself, and the tampered
    # row refuses the deposit as a read of it alone would: nothing is written
    with writer_held(tables) as submit:
        outcomes = submit(lambda: tables.deposit("late", "ria", 1))
    assert isinstance(outcomes[0], TamperDetected), outcomes
