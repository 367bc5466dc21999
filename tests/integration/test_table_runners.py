"""The runner after crashes, and two runners on one table (the fence)."""

from __future__ import annotations

import threading
from collections import Counter
from uuid import UUID

from audit_cli.rows import read_rows
from audit_cli.verify import verify
from games.blackjack import play_round
from ledger import contracts
from ledger.tables.aggregates import TableRound, TableSeat, table_round_id_for
from ledger.tables.config import rules_of
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live, plans_of
from tests.integration.test_table_seats import PLANS, SHOE, offered


def round_one(live: Live) -> TableRound:
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None
    return rnd


def topics(store: Store) -> Counter[str]:
    return Counter(r.topic for r in read_rows(store.db))


def assert_round_one_matches_the_engine(live: Live, sessions: dict[str, str]) -> None:
    rnd = round_one(live)
    assert rnd.phase == "settled"
    replay = play_round(rules_of(rnd.config), SHOE, 0, plans_of(live.app, rnd))
    assert rnd.step_cards == [str(s.card) for s in replay.steps if s.card is not None]
    assert [rnd.up, rnd.hole, *rnd.dealer_draws] == [str(c) for c in replay.shared.dealer_cards]
    for settlement in replay.settlements:
        seat = live.app.find(TableSeat, UUID(settlement.seat_id))
        assert seat is not None and seat.result["returned"] == settlement.returned
        buy_in = PLANS[next(n for n, s in sessions.items() if s == seat.session_id)]["buy_in"]
        assert live.app.session_balance(seat.session_id) == (
            buy_in - settlement.staked + settlement.returned
        )
    report = verify(read_rows(live.store.db), live.store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings


def test_a_runner_restarted_after_every_action_completes_the_round_with_the_same_cards(
    store: Store,
) -> None:
    live = Live(store, SHOE)
    sessions = {name: live.player(name, p["buy_in"]) for name, p in PLANS.items()}

    def crank(ms: int) -> None:
        """Advance the clock, then act one action at a time, a fresh process each time."""
        now = live.clock.advance(ms)
        while True:
            live.app.close()  # release its connections (PostgreSQL has a client limit)
            live.app = live.open()  # a new application: no cache, state from the log alone
            live.runner = TableRunner(live.app, "T1", live.clock)
            if not live.runner.tick(now, max_actions=1):
                return

    crank(0)
    for name, p in PLANS.items():
        live.bet(sessions[name], "main", p["main"])
    crank(10_000)
    for name, p in PLANS.items():
        if p["insurance"] is not None:
            live.decide(sessions[name], 0, "insure" if p["insurance"] else "no-insurance")
    crank(5_000)
    while round_one(live).phase == "step":
        k = round_one(live).step
        for name, p in PLANS.items():
            wanted = p["steps"].get(k)
            if wanted is not None and wanted in offered(live, sessions[name]):
                live.decide(sessions[name], k, wanted)
        crank(5_000)
    assert_round_one_matches_the_engine(live, sessions)
    counts = topics(store)
    assert counts[contracts.SEAT_SETTLED] == len(PLANS)  # every seat settled exactly once
    assert counts[contracts.TABLE_ROUND_DEALT] == 1
    assert counts[contracts.TABLE_ROUND_SETTLED] == 1


def test_two_runners_on_one_table_never_both_act(store: Store) -> None:
    live = Live(store, SHOE, config={**CONFIG, "settle_batch": 2})
    sessions = {name: live.player(name, p["buy_in"]) for name, p in PLANS.items()}
    other = TableRunner(live.open(), "T1", live.clock)
    runners = [live.runner, other]
    errors: list[BaseException] = []

    def both_tick(ms: int) -> None:
        now = live.clock.advance(ms)
        barrier = threading.Barrier(2)

        def run(runner: TableRunner) -> None:
            try:
                barrier.wait()
                runner.tick(now)
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(r,)) for r in runners]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    both_tick(0)
    for name, p in PLANS.items():
        live.bet(sessions[name], "main", p["main"])
    for ms in (10_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_000):
        both_tick(ms)
    assert errors == []
    rnd = round_one(live)
    assert rnd.phase == "settled"
    counts = topics(store)
    assert counts[contracts.TABLE_ROUND_DEALT] == 1  # one deal
    assert counts[contracts.TABLE_ROUND_INSURANCE_CLOSED] == 1
    assert counts[contracts.TABLE_ROUND_STEP_CLOSED] == len(rnd.automatic) - 1  # once each
    assert counts[contracts.SEAT_SETTLED] == len(PLANS)  # no seat settled twice
    assert counts[contracts.TABLE_ROUND_SETTLED] == 1
    assert counts[contracts.TABLE_ROUND_OPENED] == 2  # round 1 and round 2, once each
    assert_round_one_matches_the_engine(live, sessions)


RUNNER_PROCESS = """
import sys
from datetime import datetime
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from ledger.tables.runner import TableRunner

app = bootstrap(Settings())
runner = TableRunner(app, "T1")
for t in sys.argv[1:]:
    runner.tick(datetime.fromisoformat(t))
app.close()
"""


def test_two_runner_processes_on_one_table_never_both_act(store: Store) -> None:
    import os
    import subprocess
    import sys
    from datetime import timedelta

    from ledger.bootstrap import bootstrap
    from ledger.tables import commands as tc
    from tests.helpers import open_session
    from tests.integration.table_helpers import T0, FakeClock

    settings = store.settings()
    keyring = settings.keyring()  # written to the store's key directory for both processes
    clock = FakeClock()
    app = bootstrap(settings, keyring=keyring, clock=clock)
    store.apps.append(app)
    app.command("create", tc.CreateTable("T1", "EUR", dict(CONFIG)))
    TableRunner(app, "T1").tick(T0)
    sessions = [open_session(app, f"p{i}") for i in range(6)]
    for i, s in enumerate(sessions):
        app.command(f"b{i}", tc.PlaceBet(s, "T1", "main", 1_000))
    times = [(T0 + timedelta(seconds=10 + 5 * k)).isoformat() for k in range(12)]
    env = {**os.environ, "CROUPIER_DATA_DIR": str(store.data_dir)}
    if store.database_url is not None:
        env["CROUPIER_DATABASE_URL"] = store.database_url
    procs = [
        subprocess.Popen([sys.executable, "-c", RUNNER_PROCESS, *times], env=env) for _ in range(2)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    counts = topics(store)
    rnd = app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "settled"
    assert counts[contracts.TABLE_ROUND_DEALT] == 1
    assert counts[contracts.TABLE_ROUND_STEP_CLOSED] == len([k for k in rnd.automatic if k != "0"])
    assert counts[contracts.SEAT_SETTLED] == 6  # no seat settled twice
    assert counts[contracts.TABLE_ROUND_SETTLED] == 1
    report = verify(read_rows(store.db), keyring.public_keys, jobs=1)
    assert report.ok, report.findings
