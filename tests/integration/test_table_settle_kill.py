"""A table runner killed with SIGKILL while it settles a round's seats in batches.

The round (many seats, small batches) is played up to its settlement in this process;
then a runner process settles it and is killed (``kill -9``) once some batches are in,
wherever it is (between two batches or inside one's transaction). Two fresh runner
processes then finish the round at the same time (the fence between two runners). Each
dealt seat must be settled exactly once (one ``settled`` event), each session's round
closed once with at most one win credited, every balance what the seat's result says,
and ``audit-cli verify --pin --balances`` must pass: the books balance and every seat's
money is what the engine's re-execution pays it. (``test_table_crashes`` kills a runner
exactly before and after each batch's COMMIT; this one kills it where it happens to be.)
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections import Counter
from uuid import UUID

from audit_cli.main import main as audit_main
from ledger import contracts
from ledger.keys import fingerprint
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, TableSeat, seat_id_for, table_round_id_for
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import CONFIG, Live

SEATS = 60
BATCH = 4
BUY_IN = 20_000
SHOE_SEED = hashlib.sha256(b"settle kill 3").digest()
"""A shoe whose first round pays every seat (so each seat's win is credited by the
session's round-settled, the one event that credits and closes)."""


def settled_count(store: Store) -> int:
    conn = store.connect()  # type: ignore[no-untyped-call]
    try:
        mark = "?" if store.database_url is None else "%s"
        row = conn.execute(
            f"SELECT COUNT(*) FROM {store.table} WHERE topic = {mark}", (contracts.SEAT_SETTLED,)
        ).fetchone()
        return int(row[0])
    finally:
        conn.close()


def runner_process(live: Live, stop_when_settled: bool) -> int:
    """Fork a runner process on the store (its own application, the table's clock)."""
    pid = os.fork()
    if pid != 0:
        return pid
    code = 1
    try:
        app = live.open()
        runner = TableRunner(app, "T1", live.clock)
        rid = table_round_id_for("T1", 1)
        for _ in range(10_000):
            runner.tick(max_actions=1)
            rnd = app.find(TableRound, rid)
            if stop_when_settled and rnd is not None and rnd.phase == "settled":
                code = 0
                break
            time.sleep(0.005)
        app.close()
    finally:
        os._exit(code)


def play_to_settlement(live: Live) -> list[str]:
    sessions = [live.player(f"k{i}", BUY_IN) for i in range(SEATS)]
    live.tick()  # round 1 opens
    for s in sessions:
        live.bet(s, "main", 1_000)
        live.app.command(live.rid(), tc.AllSideBets(s, "T1"))
    live.tick(CONFIG["betting_ms"])  # the deal
    # nobody decides: every window closes at its deadline with seed 002's automatic actions
    rid = table_round_id_for("T1", 1)
    for _ in range(40):
        rnd = live.app.find(TableRound, rid)
        assert rnd is not None
        if rnd.phase == "settling":
            break
        live.runner.tick(live.clock.advance(10_000), max_actions=1)
    rnd = live.app.find(TableRound, rid)
    assert rnd is not None and rnd.phase == "settling" and len(rnd.seats) == SEATS
    return sessions


def test_a_runner_killed_during_bulk_settlement_leaves_every_seat_settled_exactly_once(
    store: Store,
) -> None:
    live = Live(store, config={**CONFIG, "settle_batch": BATCH}, seeds=(SHOE_SEED,))
    sessions = play_to_settlement(live)
    live.clock.advance(60_000)
    live.app.close()  # forked processes share nothing of it

    pid = runner_process(live, stop_when_settled=False)
    deadline = time.monotonic() + 120
    while settled_count(store) < 2 * BATCH:
        assert time.monotonic() < deadline, "the runner settled nothing"
        assert os.waitpid(pid, os.WNOHANG) == (0, 0), "the runner stopped on its own"
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    at_kill = settled_count(store)
    assert 0 < at_kill < SEATS, f"killed with {at_kill} of {SEATS} seats settled"
    assert at_kill % BATCH == 0, "a batch is settled whole or not at all"

    # two runners resume at once: the fence lets each seat settle once
    both = [runner_process(live, stop_when_settled=True) for _ in range(2)]
    for p in both:
        _, status = os.waitpid(p, 0)
        assert os.waitstatus_to_exitcode(status) == 0

    live.app = live.open()
    app = live.app
    rnd = app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "settled" and rnd.settled_seats == SEATS
    rows = raw_rows(store)
    per_seat = Counter(str(UUID(str(r[1]))) for r in rows if r[3] == contracts.SEAT_SETTLED)
    assert sorted(per_seat) == sorted(rnd.seats) and set(per_seat.values()) == {1}
    closed: Counter[str] = Counter()
    credited: Counter[str] = Counter()
    combined = 0
    for r in rows:  # each session played this one round (a win: credit and close together)
        if r[3] in (contracts.SESSION_ROUND_CLOSED, contracts.SESSION_ROUND_SETTLED):
            closed[str(r[1])] += 1
        if r[3] in (contracts.SESSION_WIN_CREDITED, contracts.SESSION_ROUND_SETTLED):
            credited[str(r[1])] += 1
        combined += r[3] == contracts.SESSION_ROUND_SETTLED
    for session in sessions:
        seat = app.find(TableSeat, _seat_id(rnd, session))
        assert seat is not None and seat.status == "settled"
        staked, returned = int(seat.result["staked"]), int(seat.result["returned"])
        assert app.session_balance(session) == BUY_IN - staked + returned
    assert sum(closed.values()) == SEATS and set(closed.values()) == {1}
    assert set(credited.values()) <= {1}
    assert combined == sum(credited.values()) == SEATS  # each win credited by the close

    pin = "SHA256:" + fingerprint(store.keyring.public_keys[store.keyring.signing_kid])
    assert audit_main(["verify", "--db", store.db, "--pin", pin, "--balances", "--jobs", "1"]) == 0


def _seat_id(rnd: TableRound, session: str) -> UUID:
    return seat_id_for(rnd.id, session)
