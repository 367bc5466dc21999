"""An idle table writes nothing (issue 23): a betting window that closes with no bet leaves
the round open for bets with no deadline (one ``betting-waiting`` event, then nothing while
nobody bets); the first bet starts the timer again (``betting-extended``) and the round
plays as any other. Logs written before, with a ``betting-reopened`` row for every empty
window, still replay and verify (``tests/fixtures/legacy_idle_table``).

All on a fake clock (the runner's, :class:`~tests.integration.table_helpers.FakeClock`),
ticked as ``croupier serve`` ticks every table (:class:`api.table_runners.TableRunners`).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from api.table_messages import TableFold
from api.table_runners import TableRunners
from audit_cli.main import main as audit_cli
from ledger import contracts
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.requests import Request
from ledger.results import Result
from ledger.settings import Settings
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, table_round_id_for
from ledger.tables.errors import BettingClosed
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.helpers import assert_refused, raw_rows
from tests.integration.table_helpers import CONFIG, FakeClock, Live, a_seed_that_stops_at_a_step

FIXTURE = Path(__file__).parent.parent / "fixtures" / "legacy_idle_table"
TABLES = ("T1", "T2", "T3")


def topics(rows: list[tuple[Any, ...]]) -> Counter[str]:
    return Counter(r[3] for r in rows)


def current(app: Casino, table: str = "T1", number: int = 1) -> TableRound:
    rnd = app.find(TableRound, table_round_id_for(table, number))
    assert rnd is not None
    return rnd


def serve_like(store: Store, clock: FakeClock) -> tuple[Casino, TableRunners]:
    """Three tables run as ``croupier serve`` runs them, with its 0.1 s tick."""
    app = bootstrap(store.settings(), store.keyring, clock=clock)
    store.apps.append(app)
    for name in TABLES:
        app.command(f"create-{name}", tc.CreateTable(name, "EUR", dict(CONFIG)))
    return app, TableRunners(app, clock)


def run(runners: TableRunners, clock: FakeClock, seconds: int, every_ms: int = 100) -> int:
    """Tick every table every ``every_ms`` for ``seconds`` of the fake clock; the sealer's
    timer ticks once a second (``checkpoint_interval_seconds``' default)."""
    actions = 0
    for i in range(seconds * 1000 // every_ms):
        clock.advance(every_ms)
        actions += runners.tick()
        if (i + 1) * every_ms % 1000 == 0:  # (with every_ms over 1 s: each tick)
            runners.app.sealer.tick()
    return actions


def test_idle_tables_write_no_event_and_no_checkpoint_beyond_the_first_window(
    store: Store,
) -> None:
    clock = FakeClock()
    app, runners = serve_like(store, clock)
    assert runners.tick() == 3  # each table opens its first round
    # The first window (10 s) closes with no bet: one event per table, and the sealer's
    # timer covers them with one checkpoint.
    assert run(runners, clock, 11) == 3
    for name in TABLES:
        rnd = current(app, name)
        assert rnd.phase == "betting" and rnd.deadline is None and rnd.waiting_since
    before = raw_rows(store)
    assert topics(before)[contracts.TABLE_ROUND_BETTING_WAITING] == 3
    # A minute at serve's tick (before: 162 events and 36 checkpoints for 3 tables) ...
    assert run(runners, clock, 60) == 0
    assert raw_rows(store) == before
    # ... and an hour (ticked every 10 s): not one row, not one checkpoint.
    assert run(runners, clock, 3_600, every_ms=10_000) == 0
    app.seal()
    assert raw_rows(store) == before
    assert topics(before)[contracts.TABLE_ROUND_BETTING_REOPENED] == 0


def test_a_bet_after_idling_starts_the_timer_and_the_round_plays_as_any_other(
    store: Store,
) -> None:
    live = Live(store, seeds=(a_seed_that_stops_at_a_step(CONFIG),))
    ann, bob, cat = live.player("ann"), live.player("bob"), live.player("cat")
    live.tick()  # round 1 opens, the window closes at +10 s
    live.tick(10_000)
    assert current(live.app).deadline is None
    live.tick(3_600_000)  # an hour later: still waiting, nothing written
    before = raw_rows(store)
    assert live.tick(1_000) == [] and raw_rows(store) == before
    # The first bet is accepted though the first deadline is long past ...
    live.bet(ann, "main", 1_000)
    assert current(live.app).deadline is None  # a player never writes the table round
    [start] = live.tick(100)  # ... and the runner starts a full window from now
    assert start.endswith(":start")
    rnd = current(live.app)
    started = live.clock.now
    assert rnd.deadline is not None
    assert (datetime.fromisoformat(rnd.deadline) - started).total_seconds() == 10
    live.tick(9_000)  # others join within the new window
    live.bet(bob, "main", 1_000)
    live.app.command("sides", tc.AllSideBets(ann, "T1"))
    live.clock.advance(1_000)  # the deadline: a bet now is refused, and changes nothing
    err = assert_refused(store, BettingClosed, live.bet, cat, "main", 1_000)
    assert err.code == "betting-closed"
    live.tick()  # dealt, with both seats
    rnd = current(live.app)
    assert rnd.phase == "step" and len(rnd.seats) == 2
    for _ in range(40):  # every window times out: the runner decides for the players
        if current(live.app).closed:
            break
        live.tick(5_000)
    rnd = current(live.app)
    assert rnd.phase == "settled" and rnd.settled_seats == 2
    total = rnd.totals
    balances = {s: live.app.session_balance(s) for s in (ann, bob)}
    assert sum(balances.values()) == 40_000 - total["staked"] + total["returned"]
    # the next round opened (in the tick that settled) with a fresh 10 s window
    assert current(live.app, number=2).deadline is not None
    # The stream says what happened, in order.
    fold = TableFold(live.app, "T1")
    messages, _ = fold.read(0, int(live.app.recorder.max_notification_id() or 0))
    kinds = [m.type for m in messages if m.session is None and m.data.get("number") == 1]
    assert kinds[:4] == ["round-opened", "betting-waiting", "betting-extended", "bets-closed"]
    waiting = next(m for m in messages if m.type == "betting-waiting")
    assert waiting.data["deadline"] is None and waiting.data["at"]
    _verify(store, live.app.keyring)


def test_a_disconnection_while_the_round_waits_returns_the_bets(store: Store) -> None:
    """seed 002 "Disconnessione": before the betting time ends the bets are returned; a
    round waiting for bets has not ended its betting time."""
    live = Live(store)
    ann = live.player("ann")
    live.tick()
    live.tick(10_000)
    live.bet(ann, "main", 1_000)
    live.app.command("away", tc.Disconnect(ann, "T1"))
    assert live.app.session_balance(ann) == 20_000
    assert live.tick(100) == []  # nobody holds a bet: the round goes on waiting
    assert current(live.app).deadline is None


def test_a_paused_waiting_round_resumes_waiting(store: Store) -> None:
    live = Live(store)
    ann = live.player("ann")
    live.tick()
    live.tick(10_000)
    live.app.command("pause", tc.PauseTable("T1", "dealer change"))
    assert live.tick(60_000) == []
    live.app.command("resume", tc.ResumeTable("T1"))
    assert current(live.app).deadline is None
    live.bet(ann, "main", 1_000)
    assert live.tick(100)[0].endswith(":start")


def test_two_runners_start_the_timer_once(store: Store) -> None:
    live = Live(store)
    ann = live.player("ann")
    live.tick()
    live.tick(10_000)
    live.bet(ann, "main", 1_000)
    other = TableRunner(live.app, "T1", live.clock)
    first, second = live.runner.tick(live.clock.now), other.tick(live.clock.now)
    assert first == [f"1:v{current(live.app).version - 1}:start"] and second == []
    counts = topics(raw_rows(store))
    assert counts[contracts.TABLE_ROUND_BETTING_REOPENED] == 1


# -- a log written before (tests/fixtures/legacy_idle_table) ----------------------------------


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    return data


def _verify(store: Store, keyring: Keyring) -> None:
    keys = store.data_dir / "public-keys.json"
    keys.write_text(json.dumps(keyring.public_document()))
    args = ["verify", "--db", store.db, "--keys", str(keys), "--trust-local-keyring"]
    assert audit_cli([*args, "--balances"]) == 0


def test_a_log_with_betting_reopened_rows_verifies_and_replays(legacy: Path) -> None:
    expected = json.loads((legacy / "expected.json").read_text())
    db = str(legacy / "casino.sqlite")
    assert audit_cli(["verify", "--db", db, "--balances", "--trust-local-keyring"]) == 0
    assert audit_cli(["round", expected["settled_round"], "--db", db, "--json"]) == 0
    clock = FakeClock(datetime.fromisoformat(expected["now"]))
    app = bootstrap(Settings(data_dir=legacy), clock=clock)
    try:
        assert app.session_balance(expected["session"]) == expected["session_balance"]
        old = current(app, number=2)
        assert (
            old.code == expected["open_round"] and old.deadline == expected["open_round_deadline"]
        )
        # The stream reads the old rows as it always did: betting-extended, with a deadline.
        fold = TableFold(app, "T1")
        messages, _ = fold.read(0, int(app.recorder.max_notification_id() or 0))
        extended = [m for m in messages if m.type == "betting-extended"]
        assert len(extended) == 5 and all(m.data["deadline"] for m in extended)
        # The table goes on from where the old code left it: the open window closes with no
        # bet (one betting-waiting), then nothing while nobody bets; a bet plays a round.
        runner = TableRunner(app, "T1", clock)
        rows = int(app.recorder.max_notification_id() or 0)
        assert runner.tick(clock.advance(10_000)) != []
        assert current(app, number=2).deadline is None
        waited = int(app.recorder.max_notification_id() or 0)
        for _ in range(60):
            assert runner.tick(clock.advance(1_000)) == []
        assert int(app.recorder.max_notification_id() or 0) == waited > rows
        app.command("bet-2", tc.PlaceBet(expected["session"], "T1", "main", 1_000))
        runner.tick(clock.advance(100))
        for _ in range(40):
            if current(app, number=2).closed:
                break
            runner.tick(clock.advance(10_000))
        assert current(app, number=2).phase == "settled"
    finally:
        app.close()
    assert audit_cli(["verify", "--db", db, "--balances", "--trust-local-keyring"]) == 0


def test_every_table_answer_recorded_by_the_old_code_reads_back_as_its_typed_result(
    legacy: Path,
) -> None:
    """The old handlers recorded dicts: each reads back as its command's frozen result,
    with the same value under every recorded key (a runner step is named by its request
    id, as the runner names it: ``open:N``, ``N:vV:deal``, ``N:settle-batch:B``...)."""
    app = bootstrap(Settings(data_dir=legacy))
    try:
        notes = app.recorder.select_notifications(
            start=1, limit=10_000, topics=[contracts.REQUEST_ACCEPTED]
        )
        records = [app.find(Request, n.originator_id) for n in notes]
        steps: dict[str, type[tc.RunnerCommand[Any]]] = {
            k.action: k
            for k in app.handlers
            if isinstance(k, type) and issubclass(k, tc.RunnerCommand)
        }
        players = {
            k.name: k
            for k in app.handlers
            if k.__module__ == tc.__name__ and not issubclass(k, tc.RunnerCommand)
        }
        read = 0
        for record in records:
            assert record is not None
            if record.command not in players and record.command != tc.RunnerCommand.name:
                continue  # not a table command (an account's, a session's)
            if record.command == tc.RunnerCommand.name:
                parts = record.request_id.split(":")
                action = parts[0] if parts[0] == "open" else parts[2 if parts[1][0] == "v" else 1]
                kind: Any = steps[action]
            else:
                kind = players[record.command]
            answer = kind.answer_from(record.result)
            assert isinstance(answer, Result)
            wire = answer.wire()
            assert {k: wire.get(k, "<missing>") for k in record.result} == record.result
            read += 1
        assert read >= 10 and {"deal", "step", "settle"} <= {
            r.request_id.split(":")[2] for r in records if r is not None and ":v" in r.request_id
        }
    finally:
        app.close()
