"""The recorders' bulk check behind the group commit's stale test (ledger.store
``any_newer``): one query answers for many aggregates, on both backends."""

from __future__ import annotations

from uuid import uuid4

from ledger.accounts import account_id_for
from ledger.store import NEWER_CHUNK
from tests.conftest import Store


def test_any_newer_finds_an_event_after_the_version_given(store: Store) -> None:
    app = store.open()
    players = [f"p{i}" for i in range(NEWER_CHUNK + 5)]  # more than one query's worth
    for p in players:
        app.open_account(f"o-{p}", p, "EUR")
    app.deposit("d-last", players[-1], 500)  # the last account is at version 2
    recorder = app.recorder
    at_one = [(account_id_for(p), 1) for p in players]
    assert recorder.any_newer(at_one)  # type: ignore[attr-defined]
    assert not recorder.any_newer(at_one[:-1])  # type: ignore[attr-defined]
    assert not recorder.any_newer([*at_one[:-1], (account_id_for(players[-1]), 2)])  # type: ignore[attr-defined]
    assert not recorder.any_newer([(uuid4(), 0)])  # type: ignore[attr-defined]
    assert recorder.any_newer([(uuid4(), 0), (account_id_for(players[0]), 0)])  # type: ignore[attr-defined]
    assert not recorder.any_newer([])  # type: ignore[attr-defined]
