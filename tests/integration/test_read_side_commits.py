"""The views folded at commit (issue 25, :mod:`ledger.readside.commits`): a command's
events are in the views when it returns, with no runner and no read catching up; a view a
few events behind is brought along, one far behind is left to the runner; a view that
fails to fold never refuses the command."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg.sql import SQL

from ledger.casino import Casino
from ledger.readside import commits
from ledger.readside.runner import Runner
from ledger.statement import statements
from tests.conftest import Store, _make_store
from tests.integration.test_read_side_crashes import every_row
from tests.integration.test_report import log

__all__ = ["log"]


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


def test_a_view_whose_rows_collide_at_commit_does_not_refuse_the_command(store: Store) -> None:
    """Rows an insider added where the next command's statement lines go: the commit's
    write of the views fails in the database, and only the views' part rolls back."""
    app = store.open()
    app.open_account("ria-open", "ria", "EUR")
    at = head(app)
    lines = app.readside["statement"].view.table_names["lines"]
    mark = "?" if store.kind == "sqlite" else "%s"
    conn = store.connect()  # type: ignore[no-untyped-call]
    for seq in range(at + 1, at + 100):  # PostgreSQL's ids may skip a few
        conn.execute(f"INSERT INTO {lines} (player, seq) VALUES ({mark}, {mark})", ("ria", seq))
    app.deposit("ria-dep", "ria", 700)  # answered: the events are written
    assert app.account_balance("ria") == 700
    assert set(positions(app).values()) == {at}  # all views of the commit stay where they were
    assert app.readside.commits is not None and app.readside.commits.failures == 1
    conn.execute(f"DELETE FROM {lines} WHERE seq > {mark}", (at,))
    conn.close()
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


@pytest.fixture
def inserts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any, Any]]:
    """Every insert the commit fold sees: its stored events, ids and domain events."""
    seen: list[tuple[Any, Any, Any]] = []
    real = commits.CommitFold.inserted

    def spy(self: Any, c: Any, stored: Any, ids: Any, events: Any = None) -> None:
        seen.append((self, stored, events))
        real(self, c, stored, ids, events)

    monkeypatch.setattr(commits.CommitFold, "inserted", spy)
    return seen


@pytest.fixture
def played_log(
    inserts: list[tuple[Any, Any, Any]], log: tuple[str, Any, str]
) -> list[tuple[Any, Any, Any]]:
    return inserts


def test_a_commits_payloads_are_built_as_the_log_holds_them(
    played_log: list[tuple[Any, Any, Any]],
) -> None:
    """Three days of Red Dog, video poker, a live table and a seamless wallet: each
    domain event's payload, built without JSON at commit, equals its sealed payload
    decoded (what the runner and the check read)."""
    import json

    from ledger import envelope

    taken: dict[str, set[str]] = {}
    for fold, stored, events in played_log:
        assert events is not None and len(events) == len(stored)
        for s, event in zip(stored, events, strict=True):
            decoded = json.loads(envelope.decode(s.state).payload)
            assert dict(fold._payload(event)) == decoded, s.topic
            for p in fold.readside.projections.values():
                if p.projector.takes(s.topic, vars(event)):
                    taken.setdefault(p.name, set()).add(s.topic)
    assert {name: len(topics) > 3 for name, topics in taken.items()} == {
        "statement": True,
        "wallet": True,
        "totals": True,
    }


def test_a_commit_reads_the_rows_it_folds_in_one_statement_per_table_past_the_cache(
    store: Store, monkeypatch: Any
) -> None:
    """Once the views' row caches no longer hold the players being played (a 10,000-seat
    table's round), a commit's fold reads the rows it needs beforehand, one statement per
    table (``Rows.prefetch``), not one SELECT per row; only the few day rows of the
    totals are read as asked. The views still equal a rebuild."""
    from ledger.readside.view import View

    app = store.open()
    players = [f"p{n}" for n in range(6)]
    for player in players:
        play(app, player, 1)
    for p in app.readside.projections.values():
        p.rows.size = 3  # far fewer rows than the players' (as 20,000 against 10,000 seats)
        p.rows.abandon()
    one: list[str] = []
    many: list[int] = []
    get, get_many = View.get, View.get_many

    def counted_get(self: View, c: Any, table: Any, key: Any) -> Any:
        one.append(table.name)
        return get(self, c, table, key)

    def counted_many(self: View, c: Any, table: Any, keys: Any) -> Any:
        many.append(len(keys))
        return get_many(self, c, table, keys)

    monkeypatch.setattr(View, "get", counted_get)
    monkeypatch.setattr(View, "get_many", counted_many)
    for player in players:
        play(app, f"{player}-again", 1)  # a new player: new rows, absent ones read as such
        app.deposit(f"{player}-more", player, 50)  # an old player: rows the cache let go
    assert set(positions(app).values()) == {head(app)}
    assert many and max(many) >= 2
    assert set(one) <= {"days"}, one
    assert [ln.amount for ln in statements(app).lines("p0")][-1] == 50
    assert_equal_to_a_rebuild(app)


@pytest.fixture
def postgres_store(tmp_path: Path) -> Iterator[Store]:
    yield from _make_store("postgres", tmp_path)


@pytest.mark.postgres
@pytest.mark.parametrize("failure", ["check", "slow-trigger", "positions"])
def test_a_pipelined_statement_of_the_fold_that_fails_does_not_refuse_the_command(
    postgres_store: Store, monkeypatch: Any, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    """PostgreSQL pipelines the fold's statements with the command's: psycopg raises a
    statement's error when its result is fetched, which may be after the savepoint's
    ``try`` (the events' commit), and would then abort the command's transaction
    ("pipeline aborted"). Each statement of the fold that the database can refuse:

    - ``check``: the views' write refused at once (a CHECK the view's row fails);
    - ``slow-trigger``: the write refused after a while (a lock or statement timeout, a
      large write's collision), so its error arrives after the RELEASE was sent;
    - ``positions``: the tracking rows' read, pipelined before the insert.

    The command is answered, its events committed, the views left where they were (a
    warning says so) and caught up later."""
    store = postgres_store
    app = store.open()
    app.open_account("ria-open", "ria", "EUR")
    at = head(app)
    lines = app.readside["statement"].view.table_names["lines"]
    conn = store.connect()  # type: ignore[no-untyped-call]
    fold = app.readside.commits
    assert fold is not None
    if failure == "check":
        conn.execute(f"ALTER TABLE {lines} ADD CONSTRAINT pipeabort CHECK (seq < 0) NOT VALID")
    elif failure == "slow-trigger":
        conn.execute(
            f"CREATE FUNCTION {store.schema}.pipeabort() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(0.2); RAISE EXCEPTION 'refused late'; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER pipeabort BEFORE INSERT OR UPDATE ON {lines} "
            f"FOR EACH ROW EXECUTE FUNCTION {store.schema}.pipeabort()"
        )
    else:
        real = fold._pg_positions
        tracking = app.readside["statement"].view.tracking_table
        monkeypatch.setattr(  # the same parameters, a row the database refuses to return
            fold,
            "_pg_positions",
            SQL(
                "SELECT application_name AS name, 1 / (notification_id - notification_id) "
                "AS position, %s::bigint AS head "
                f"FROM {tracking} WHERE application_name = ANY(%s) FOR UPDATE SKIP LOCKED"
            ),
        )
    with caplog.at_level(logging.WARNING, logger="croupier.readside"):
        app.deposit("ria-dep", "ria", 700)  # answered: the events are written
    assert app.account_balance("ria") == 700
    written = conn.execute(
        f"SELECT count(*) FROM {store.table} WHERE notification_id > %s", (at,)
    ).fetchone()
    assert written == (head(app) - at,)  # no id skipped: no attempt was refused and retried
    assert set(positions(app).values()) == {at}  # all views stay where they were
    assert fold.failures == 1
    refused = {"check": "pipeabort", "slow-trigger": "refused late", "positions": "by zero"}
    warned = [r.getMessage() for r in caplog.records if "not folded" in r.getMessage()]
    assert len(warned) == 1 and refused[failure] in warned[0], caplog.text  # the database's
    if failure == "positions":
        monkeypatch.setattr(fold, "_pg_positions", real)
    else:
        conn.execute(
            f"ALTER TABLE {lines} DROP CONSTRAINT pipeabort"
            if failure == "check"
            else f"DROP TRIGGER pipeabort ON {lines}"
        )
    conn.close()
    app.readside.catch_up()  # the runner's work
    assert set(positions(app).values()) == {head(app)}
    assert [ln.amount for ln in statements(app).lines("ria")] == [700]
    assert_equal_to_a_rebuild(app)


def test_a_process_off_duty_leaves_the_fold_and_the_runner_to_the_one_on_duty(
    store: Store,
) -> None:
    """With several workers only the holder of the runners' lease folds at its commits
    and runs the read side's runner (ledger.runner_lease): the other's commits leave the
    views where they are, the holder's next commit brings its events along, and a read
    in the process off duty still sees its own writes."""
    holder, other = store.open(), store.open()
    assert holder.readside.commits is not None and other.readside.commits is not None
    other.readside.commits.on_duty = lambda: False
    holder.open_account("ria-open", "ria", "EUR")
    at = positions(holder)
    other.deposit("ria-dep", "ria", 700)
    assert positions(other) == at  # nothing folded off duty
    runner = Runner(other.readside, poll=0.01, on_duty=lambda: False)
    runner.start()
    try:
        time.sleep(0.2)
        assert runner.passes == 0 and positions(other) == at
    finally:
        runner.stop()
    holder.deposit("ria-dep-2", "ria", 300)  # folds the other's events, then its own
    assert set(positions(holder).values()) == {head(holder)}
    other.deposit("ria-dep-3", "ria", 5)
    assert max(positions(other).values()) < head(other)
    # a read off duty catches the view up itself
    assert [ln.amount for ln in statements(other).lines("ria")] == [700, 300, 5]
    assert_equal_to_a_rebuild(holder)
