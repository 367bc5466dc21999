"""``Casino.find`` gives the caller its own copy of an aggregate; ``Casino.peek`` the
cache's object, for readers only (the table runner looks at a round ten times a second,
and copying a 10,000-seat round costs tens of milliseconds). Both are brought up to the
store's newest version."""

from __future__ import annotations

from ledger.tables import commands as tc
from ledger.tables.aggregates import Table, table_id_for
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live


def test_find_copies_and_peek_does_not_and_both_see_another_writer(store: Store) -> None:
    live = Live(store, config=dict(CONFIG))
    app, tid = live.app, table_id_for("T1")
    seen = app.peek(Table, tid)
    assert seen is not None and app.peek(Table, tid) is seen  # the cache's own object
    mine = app.find(Table, tid)
    assert mine is not None and mine is not seen and vars(mine) == vars(seen)
    mine.config["chip"] = 999_999  # the caller's copy: nothing reaches the cache
    assert app.peek(Table, tid).config == dict(seen.config)  # type: ignore[union-attr]
    assert "chip" not in seen.config or seen.config["chip"] != 999_999

    other = live.open()  # another worker changes the table
    other.command("cfg-1", tc.ConfigureTable("T1", {"chip": 300}))
    newer = other.find(Table, tid)
    assert newer is not None
    for found in (app.peek(Table, tid), app.find(Table, tid)):
        assert found is not None and found.version == newer.version
        assert found.config == newer.config
    missing = table_id_for("T2")
    assert app.peek(Table, missing) is None and app.find(Table, missing) is None
