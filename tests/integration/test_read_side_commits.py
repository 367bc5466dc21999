"""The views folded at commit (issue 25, :mod:`ledger.readside.commits`): a command's
events are in the views when it returns, with no runner and no read catching up; a view a
few events behind is brought along, one far behind is left to the runner; a view that
fails to fold never refuses the command."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.casino import Casino
from ledger.readside import commits
from ledger.statement import statements
from tests.conftest import Store
from tests.integration.test_read_side_crashes import every_row


def head(app: Casino) -> int:
    return int(app.recorder.max_notification_id() or 0)


def positions(app: Casino) -> dict[str, int]:
    return {name: p.position() for name, p in app.readside.projections.items()}


def play(app: Casino, player: str, rounds: int) -> None:
    app.open_account(f"{player}-open", player, "EUR")
    app.deposit(f"{player}-dep", player, 10_000)
    sid = app.open_session(f"{player}-buy", player, 5_000).session_id
    for n in range(rounds):
        r = app.red_dog_bet(f"{player}-bet-{n}", sid, 100)
        if r.status == "open":
            app.red_dog_see(f"{player}-see-{n}", sid)
    app.close_session(f"{player}-close", sid)


def assert_equal_to_a_rebuild(app: Casino) -> None:
    for p in app.readside.projections.values():
        assert p.check().differences == [], p.name
    kept = every_row(app)
    for p in app.readside.projections.values():
        p.rebuild()
    assert every_row(app) == kept


def test_a_commands_events_are_in_the_views_when_it_returns(store: Store) -> None:
    app = store.open()
    assert app.readside.commits is not None
    play(app, "ria", 4)
    assert set(positions(app).values()) == {head(app)}  # nobody caught them up
    assert app.readside.commits.folded > 0
    assert [ln.amount for ln in statements(app).lines("ria")][:2] == [10_000, -5_000]
    assert_equal_to_a_rebuild(app)


def test_a_view_a_few_events_behind_is_brought_along_one_far_behind_is_left(
    store: Store, monkeypatch: Any
) -> None:
    app = store.open()
    fold = app.readside.commits
    assert fold is not None
    fold.enabled = False  # another writer that does not fold, in effect
    app.open_account("ria-open", "ria", "EUR")
    app.deposit("ria-dep", "ria", 700)
    behind = positions(app)
    assert max(behind.values()) < head(app)
    fold.enabled = True
    app.deposit("ria-dep-2", "ria", 300)  # its commit folds the gap, then its own events
    assert set(positions(app).values()) == {head(app)}
    assert [ln.amount for ln in statements(app).lines("ria")] == [700, 300]

    monkeypatch.setattr(commits, "GAP", 2)
    fold.enabled = False
    for n in range(3):
        app.deposit(f"ria-more-{n}", "ria", 1)
    left = positions(app)
    fold.enabled = True
    app.deposit("ria-last", "ria", 5)
    assert positions(app) == left  # more than GAP behind: not folded at the commit
    app.readside.catch_up()  # the runner's work
    assert set(positions(app).values()) == {head(app)}
    assert [ln.amount for ln in statements(app).lines("ria")] == [700, 300, 1, 1, 1, 5]
    assert_equal_to_a_rebuild(app)


@pytest.mark.parametrize("failure", ["projector", "database"])
def test_a_view_that_fails_to_fold_does_not_refuse_the_command(
    store: Store, monkeypatch: Any, failure: str
) -> None:
    app = store.open()
    app.open_account("ria-open", "ria", "EUR")
    statement = app.readside["statement"]
    before = statement.position()
    real = type(statement.projector).apply

    def broken(self: Any, rows: Any, *args: Any) -> None:
        if failure == "database":  # a statement the database refuses, mid-fold
            rows.view.execute(rows.c, "SELECT * FROM no_such_table")
            rows.c.fetchall()
        raise KeyError("a bug in a projector")

    monkeypatch.setattr(type(statement.projector), "apply", broken)
    app.deposit("ria-dep", "ria", 700)  # answered: the events are written
    assert app.account_balance("ria") == 700
    assert statement.position() == before  # all views of the commit stay where they were
    assert app.readside.commits is not None and app.readside.commits.failures == 1
    monkeypatch.setattr(type(statement.projector), "apply", real)
    app.deposit("ria-dep-2", "ria", 1)  # the next commit brings the views along
    assert set(positions(app).values()) == {head(app)}
    assert [ln.amount for ln in statements(app).lines("ria")] == [700, 1]
    assert_equal_to_a_rebuild(app)


@pytest.mark.parametrize("holder", ["runner", "reader"])
def test_a_view_held_by_another_thread_is_skipped_not_waited_for(store: Store, holder: str) -> None:
    app = store.open()
    app.open_account("ria-open", "ria", "EUR")
    statement = app.readside["statement"]
    with statement.lock:  # a runner's (or reader's) batch in progress in this process
        app.deposit("ria-dep", "ria", 700)
    assert statement.position() < head(app)
    assert app.readside["wallet"].position() == head(app)  # the others were folded
    app.readside.catch_up()
    assert [ln.amount for ln in statements(app).lines("ria")] == [700]
    assert_equal_to_a_rebuild(app)
