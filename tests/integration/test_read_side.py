"""The read side (issue 25): views kept from the signed log with tracking, equal to what
the log implies, checkable against it and rebuilt from it."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from ledger.accounts import account_id_for
from ledger.casino import Casino
from ledger.checkpoints import feed_opened
from ledger.readside.view import INT, Table, _on_conflict
from ledger.statement import StatementBook, statements
from tests.conftest import Store
from tests.integration.test_report import log
from tests.integration.test_statement import PLAYER, played, win_a_round

__all__ = ["log", "played"]


def book_of(app: Casino) -> StatementBook:
    everyone = StatementBook()
    feed_opened(app, 0, everyone.feed_payload)
    return everyone


def view_table(store: Store, app: Casino, projection: str, table: str) -> str:
    return app.readside[projection].view.table_names[table]


def test_the_statement_view_equals_the_book_of_the_whole_log(played: dict[str, Any]) -> None:
    app: Casino = played["app"]
    app.open_account("open-other", "otto", "EUR")
    app.deposit("dep-other", "otto", 9_000)
    other = app.open_session("buy-other", "otto", 5_000).session_id
    win_a_round(app, other, "o")
    everyone = book_of(app)
    for player in (PLAYER, "otto"):
        assert statements(app).lines(player) == everyone.lines(player)
        assert statements(app).balances(player) == everyone.balances(player)
        assert list(statements(app).balances(player)) == list(everyone.balances(player))
    lines = everyone.lines(PLAYER)
    page = statements(app).lines(PLAYER, after=lines[3].seq, limit=4)
    assert page == lines[4:8]
    assert statements(app).totals(PLAYER) == {
        "balance": lines[-1].balance,
        "account_balance": lines[-1].account_balance,
    }


def test_a_read_reflects_at_least_the_position_it_asks_for(store: Store) -> None:
    app = store.open()
    app.open_account("open", "ria", "EUR")
    app.deposit("dep", "ria", 500)
    position = app.position
    assert position > 0
    book = statements(app, at_least=position)
    assert [ln.amount for ln in book.lines("ria")] == [500]
    assert book.position >= position
    assert app.readside["statement"].position() >= position


def test_an_edited_row_is_reported_by_the_check_and_a_rebuild_repairs_it(
    store: Store, played: dict[str, Any]
) -> None:
    app: Casino = played["app"]
    projection = app.readside["statement"]
    projection.catch_up()
    assert projection.check().differences == []
    lines = statements(app).lines(PLAYER)
    target = lines[2]
    table = view_table(store, app, "statement", "lines")
    ledgers = view_table(store, app, "statement", "ledgers")
    conn = store.connect()
    mark = "?" if store.kind == "sqlite" else "%s"
    conn.execute(
        f"UPDATE {table} SET amount = amount + 1000 WHERE player = {mark} AND seq = {mark}",
        (PLAYER, target.seq),
    )
    conn.execute(f"UPDATE {ledgers} SET balance = balance - 1 WHERE player = {mark}", (PLAYER,))
    conn.close()
    found = projection.check()
    edited = [(d.table, d.key) for d in found.differences]
    assert ("lines", [PLAYER, target.seq]) in edited
    assert {t for t, _ in edited} == {"lines", "ledgers"}
    line = next(d for d in found.differences if d.table == "lines")
    assert line.view is not None and line.log is not None
    assert line.view["amount"] == line.log["amount"] + 1000
    projection.rebuild()
    assert projection.check().differences == []
    assert statements(app).lines(PLAYER) == lines
    assert statements(app).lines(PLAYER) == book_of(app).lines(PLAYER)


def test_a_ledgers_fixed_columns_are_written_once_and_an_edit_of_them_is_reported(
    store: Store,
) -> None:
    """The ledgers' upsert leaves ``player``, ``owned`` and ``ord`` as first written (an
    indexed column set again rewrites its index entry): a later movement moves the
    balance, not an insider's edit of them, which the check names."""
    app = store.open()
    app.open_account("open", "ria", "EUR")
    app.deposit("dep-1", "ria", 500)
    projection = app.readside["statement"]
    projection.catch_up()
    ledgers = view_table(store, app, "statement", "ledgers")
    conn = store.connect()
    mark = "?" if store.kind == "sqlite" else "%s"
    conn.execute(f"UPDATE {ledgers} SET ord = ord + 7 WHERE player = {mark}", ("ria",))
    conn.close()
    app.deposit("dep-2", "ria", 250)  # folded at commit: an upsert of the account's row
    assert statements(app).balances("ria") == {f"account:{account_id_for('ria')}": 750}
    found = projection.check()
    assert [(d.table, d.view["ord"] - d.log["ord"]) for d in found.differences] == [("ledgers", 7)]
    projection.rebuild()
    assert projection.check().differences == []


def test_a_tables_fixed_columns_are_checked_and_an_upsert_of_only_fixed_ones_does_nothing() -> None:
    columns = (("k", INT), ("v", INT), ("position", INT))
    assert Table("t", columns, ("k",), fixed=("v",)).fixed == ("v",)
    for fixed in (("k",), ("w",)):
        with pytest.raises(ValueError, match="fixed columns"):
            Table("t", columns, ("k",), fixed=fixed)
    # an upsert of a table whose every other column is fixed leaves the row as it is
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k))")
    for fixed, expected in (((), 2), (("v",), 1)):
        table = Table("t", (("k", INT), ("v", INT)), ("k",), fixed=fixed)
        conn.execute("DELETE FROM t")
        for value in (1, 2):
            conn.execute(
                f"INSERT INTO t VALUES (?, ?){_on_conflict(table, table.names)}", (7, value)
            )
        assert conn.execute("SELECT v FROM t").fetchall() == [(expected,)]


def test_a_rebuild_on_a_running_log_ends_equal_to_the_log(store: Store) -> None:
    app = store.open()
    app.open_account("open", "ria", "EUR")
    for n in range(30):
        app.deposit(f"dep-{n}", "ria", 10 + n)
    projection = app.readside["statement"]
    projection.catch_up()
    projection.rebuild()
    app.deposit("dep-late", "ria", 1)
    assert statements(app).lines("ria") == book_of(app).lines("ria")
    assert projection.check().differences == []


def test_croupier_projections_check_reports_an_edited_row_and_rebuild_repairs_it(
    tmp_path: Any, monkeypatch: Any, capsys: Any
) -> None:
    """The CLI on the configured store (SQLite in CROUPIER_DATA_DIR, keys beside it)."""
    import json
    import sqlite3

    from api.cli import main as croupier
    from ledger.bootstrap import bootstrap
    from ledger.settings import Settings

    monkeypatch.setenv("CROUPIER_DATA_DIR", str(tmp_path))
    app = bootstrap(Settings())
    try:
        app.open_account("o", "cli", "EUR")
        app.deposit("d1", "cli", 700)
        app.deposit("d2", "cli", 300)
        table = app.readside["statement"].view.table_names["lines"]
    finally:
        app.close()
    assert croupier(["projections", "check"]) == 0  # the check catches the views up first
    assert json.loads(capsys.readouterr().out)["views"][0]["differences"] == []
    conn = sqlite3.connect(tmp_path / "casino.sqlite", isolation_level=None)
    conn.execute(f"UPDATE {table} SET balance = 1 WHERE player = 'cli'")
    conn.close()
    assert croupier(["projections", "check", "--name", "statement"]) == 1
    found = json.loads(capsys.readouterr().out)["views"][0]["differences"]
    assert {(d["table"], d["view"]["balance"], d["log"]["balance"]) for d in found} == {
        ("lines", 1, 700),
        ("lines", 1, 1000),
    }
    assert croupier(["projections", "rebuild", "--name", "statement"]) == 0
    capsys.readouterr()
    assert croupier(["projections", "check"]) == 0
    capsys.readouterr()
    assert croupier(["projections", "status"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert set(status["views"]) >= {"statement", "wallet"}
    assert status["views"]["statement"] == status["head"] > 0


def test_the_wallet_view_pages_equal_the_book_of_the_whole_log(tmp_path: Any) -> None:
    """Every page of the reconciliation, by cursor, operator and day, as the wallet book
    fed the whole log lists it; an edited row is reported and a rebuild repairs it."""
    import sqlite3

    from ledger.seamless.book import listing, wallet_book
    from ledger.seamless.commands import OpenSeamlessSession
    from tests.seamless_support import OP, open_casino
    from tests.wallet_fakes import wallet_over_http

    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet", read_timeout=1.0) as wallet:
        app = open_casino(tmp_path / "data", wallet.client)
        try:
            wallet.admin.set_player("ann", "EUR", 1_000_000)
            opened = app.command("open-ann", OpenSeamlessSession(OP, "ann", "EUR"))
            sid = str(opened.session_id)
            for n in range(12):
                r = app.red_dog_bet(f"bet-{n}", sid, 500)
                if r.status == "open":
                    app.red_dog_see(f"see-{n}", sid)
            app.seamless.outbox.drain()
            book = wallet_book(app)
            everything = [e.to_dict() for e in book.listed()]
            assert len(everything) >= 12
            assert [e.to_dict() for e in listing(app)] == everything
            after, pages = 0, []
            while True:
                found = listing(app, after=after, limit=5)
                pages += [e.to_dict() for e in found]
                if len(found) < 5:
                    break
                after = found[-1].seq
            assert pages == everything
            day = everything[0]["time"][:10]
            assert [e.to_dict() for e in listing(app, OP, day, day)] == [
                e.to_dict() for e in book.listed(OP, day, day)
            ]
            assert listing(app, "another-operator") == []
            projection = app.readside["wallet"]
            assert projection.check().differences == []
            table = projection.view.table_names["transactions"]
            conn = sqlite3.connect(tmp_path / "data" / "casino.sqlite", isolation_level=None)
            conn.execute(
                f"UPDATE {table} SET state = 'accepted', amount = 1 WHERE ord = "
                f"(SELECT MIN(ord) FROM {table})"
            )
            conn.close()
            found = projection.check().differences
            assert [d.key for d in found] == [[everything[0]["transaction_id"]]]
            projection.rebuild()
            assert projection.check().differences == []
            assert [e.to_dict() for e in listing(app)] == everything
        finally:
            app.close()


def test_the_daily_totals_view_equals_the_reports_utc_days(
    log: tuple[str, Any, str],
) -> None:
    """Three days of Red Dog, video poker, a live table and a seamless wallet, with voids
    of open and of settled rounds: the view's day rows are the report's UTC day rows."""
    from pathlib import Path

    from audit_cli.report import build_report
    from ledger.bootstrap import bootstrap
    from ledger.readside.totals import daily
    from ledger.settings import Settings
    from tests.integration.test_http_e2e import CREDENTIALS

    db = log[0]
    report = build_report(db)
    settings = Settings(data_dir=Path(db).parent, **CREDENTIALS)  # type: ignore[arg-type]
    app = bootstrap(settings)
    try:
        rows, position = daily(app)
        assert position == app.recorder.max_notification_id()
        fields = ("day", "game", "variant", "currency", "rounds", "voided", "stakes", "wins")
        fields += ("refunds", "reversed", "ggr", "rtp_observed")
        expected = [{k: d.to_dict()[k] for k in fields} for d in report.days]
        assert [{k: r[k] for k in fields} for r in rows] == expected
        assert {r["game"] for r in rows} >= {"red-dog", "video-poker", "blackjack"}
        assert any(r["voided"] for r in rows) and any(r["refunds"] for r in rows)
        day = rows[-1]["day"]
        assert daily(app, day, day)[0] == [r for r in rows if r["day"] == day]
        assert app.readside["totals"].check().differences == []
    finally:
        app.close()


def test_http_reads_say_their_position_and_read_a_commands_own_write(store: Store) -> None:
    """A command's answer carries X-Log-Position; a read at that position sees it; the
    balances and daily totals come from the views; a bad day or an unknown player is a
    typed error that changes nothing."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.auth import Credentials

    app = store.open()
    creds = Credentials(
        "op-token-0123456789abcdef", "au-token-0123456789abcdef", b"s" * 32, "t", "t"
    )
    auth = {"Authorization": "Bearer op-token-0123456789abcdef"}
    with TestClient(create_app(app, credentials=creds)) as http:
        opened = http.post(
            "/v1/accounts",
            json={"player_id": "hal", "currency": "EUR"},
            headers={**auth, "Idempotency-Key": "open-hal"},
        )
        assert opened.status_code == 201, opened.text
        dep = http.post(
            "/v1/accounts/hal/deposits",
            json={"amount": 1234},
            headers={**auth, "Idempotency-Key": "dep-hal"},
        )
        position = int(dep.headers["X-Log-Position"])
        assert position >= int(opened.headers["X-Log-Position"]) > 0
        page = http.get(f"/v1/accounts/hal/statement?at_least={position}", headers=auth).json()
        assert page["position"] >= position
        assert [ln["amount"] for ln in page["lines"]] == [1234]
        got = http.get("/v1/accounts/hal/balances", headers=auth).json()
        assert got["balance"] == got["account_balance"] == 1234
        assert [x["balance"] for x in got["ledgers"]] == [1234] and got["position"] >= position
        assert http.get("/v1/accounts/nobody/balances", headers=auth).json()["code"] == (
            "account-not-found"
        )
        days = http.get("/v1/totals/daily", headers=auth).json()
        assert days["days"] == [] and days["position"] >= position  # no round played yet
        before = app.recorder.max_notification_id()
        bad = http.get("/v1/totals/daily?from=yesterday", headers=auth)
        assert bad.status_code == 422
        far = http.get(f"/v1/accounts/hal/balances?at_least={position + 10**6}", headers=auth)
        assert far.status_code == 409 and far.json()["code"] == "position-not-reached"
        assert "Retry-After" not in far.headers  # a position never written: not retryable
        assert app.recorder.max_notification_id() == before  # the refusals wrote nothing
