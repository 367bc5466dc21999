"""What ``croupier serve`` does for the live tables (api/table_runners.py), on a fake clock:
every table's runner ticks, a table created while serving gets one, a failing table is
logged once and does not stop the others, the thread stops cleanly, and the embedded
default gets its one table on the first start only."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from api.table_runners import DEFAULT_TABLE, TableRunners, ensure_default_table
from audit_cli.main import main as audit_cli
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables import views as queries
from ledger.tables.aggregates import TableRound, table_round_id_for
from tests.conftest import Store
from tests.helpers import open_session
from tests.integration.table_helpers import CONFIG, FakeClock
from tests.integration.test_http_serve import serving


def open_app(store: Store, clock: FakeClock) -> Casino:
    app = bootstrap(store.settings(), store.keyring, clock=clock)
    store.apps.append(app)
    return app


def test_every_table_runs_also_one_created_while_serving(store: Store) -> None:
    clock = FakeClock()
    app = open_app(store, clock)
    app.command("c1", tc.CreateTable("T1", "EUR", dict(CONFIG)))
    runners = TableRunners(app, clock, discover_every=2)
    assert runners.tick() == 1  # T1's first round opens
    app.command("c2", tc.CreateTable("T2", "EUR", dict(CONFIG)))
    assert runners.tick() == 0 and set(runners.runners) == {"T1"}  # not looked for yet
    assert runners.tick() == 1 and set(runners.runners) == {"T1", "T2"}
    ann = open_session(app, "ann")
    app.command("b1", tc.PlaceBet(ann, "T1", "main", 1_000))
    clock.advance(10_000)
    assert runners.tick() >= 2  # T1 deals; T2 nobody bet: it waits for a first bet
    # Round 1, the one ann bet in: a player blackjack settles it in this same tick and
    # the table's current round is then round 2 (the shoe is random).
    t1 = app.find(TableRound, table_round_id_for("T1", 1))
    assert t1 is not None and t1.up is not None and t1.seats


class Broken:
    def tick(self, now: object) -> list[str]:
        raise RuntimeError("the store is gone")


def test_a_failing_table_is_logged_once_and_the_others_go_on(
    sqlite_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    app = open_app(sqlite_store, clock)
    app.command("c1", tc.CreateTable("T1", "EUR", dict(CONFIG)))
    runners = TableRunners(app, clock)
    runners.runners["T0"] = Broken()  # type: ignore[assignment]  # a fake runner
    with caplog.at_level(logging.ERROR, logger="croupier.tables"):
        assert runners.tick() == 1  # T1 still opened its round
        runners.tick()
    logged = [r for r in caplog.records if "table T0" in r.getMessage()]
    assert len(logged) == 1 and runners.failures == 2


def test_the_runners_thread_stops_cleanly(sqlite_store: Store) -> None:
    clock = FakeClock()
    app = open_app(sqlite_store, clock)
    runners = TableRunners(app, clock, interval=0.001)
    runners.start()
    runners.stop()
    assert runners._thread is None  # joined
    app.command("c1", tc.CreateTable("T1", "EUR", dict(CONFIG)))
    assert queries.table(app, "T1").rounds == 0  # nothing ticks after the stop


def test_the_embedded_default_gets_one_table_on_its_first_start(sqlite_store: Store) -> None:
    app = open_app(sqlite_store, FakeClock())
    assert ensure_default_table(app) == DEFAULT_TABLE
    assert ensure_default_table(app) is None
    assert [t.table for t in queries.tables(app)] == [DEFAULT_TABLE]
    assert queries.table(app, DEFAULT_TABLE).currency == "EUR"


def test_croupier_serve_on_an_empty_data_directory_serves_table_ibj_1(tmp_path: Path) -> None:
    with serving(tmp_path) as base:
        tokens = json.loads((tmp_path / "api-tokens.json").read_text())
        op = {"Authorization": f"Bearer {tokens['operator']}"}
        tables = httpx.get(f"{base}/v1/tables", headers=op).json()["tables"]
        assert [(t["table"], t["currency"]) for t in tables] == [(DEFAULT_TABLE, "EUR")]
    with serving(tmp_path) as base:  # a second start adds no table
        assert len(httpx.get(f"{base}/v1/tables", headers=op).json()["tables"]) == 1
    pin = str(tmp_path / "keys" / "keyring.json")
    db = str(tmp_path / "casino.sqlite")
    assert audit_cli(["verify", "--db", db, "--pin", pin, "--jobs", "1", "--balances"]) == 0
