"""A live table round crashed at every kind of event, then restarted on the same store.

The test plays one round of many seats (insurance, several steps, several settlement
batches). Before each thing that writes — a bet, a decision, and every runner action
(open, deal, insurance close, each step close, dealer, each settlement batch, finish, the
next round's open) — it closes its application and forks a child process that opens a
fresh one on the same store and does that one thing, dying with ``os._exit``:

- *before COMMIT*: every row of the transaction written (SQLite: inserted; PostgreSQL:
  inserted and synced), then the process dies: the rows must all be gone;
- *after COMMIT*: the transaction committed, then the process dies before anyone hears
  back: the rows must all be there, and a retry (of a player's command, with its request
  id; of the runner, from the log) must not do it twice.

After each crash the parent opens a new application (no cache: its state is the log
alone) and goes on. At the end the round must be the one the pure engine plays from the
same shoe and the recorded decisions, card by card and payout by payout, every seat
settled exactly once, every session's balance what the engine says, and the log must
verify (signatures, chains, books).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from audit_cli.rows import read_rows
from audit_cli.verify import verify
from ledger import contracts
from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live
from tests.integration.test_table_runners import assert_round_one_matches_the_engine, round_one
from tests.integration.test_table_seats import PLANS, SHOE, offered

CRASHED, NOTHING_TO_DO, WROTE_WITHOUT_CRASH, FAILED = 17, 18, 19, 20
Act = Callable[[Casino, Callable[[str], Any]], "str | None"]
"""Does one thing on a fresh application; names it (``note``) before it writes."""


def raw_rows(store: Store) -> list[tuple[Any, ...]]:
    """Every stored row but the checkpoints (which opening and closing an application
    seal on their own: not part of any command)."""
    return [
        (r.originator_id, r.version, r.topic, r.state)
        for r in read_rows(store.db)
        if not r.topic.startswith("croupier/checkpoint/")
    ]


def arm(app: Casino, mode: str) -> None:
    """Make the application's next transaction kill the process: just before its COMMIT
    (every row written) or just after it."""
    recorder: Any = app.recorder
    if mode == "after-commit":
        insert = recorder.insert_events

        def insert_then_die(stored_events: Any, **kwargs: Any) -> Any:
            insert(stored_events, **kwargs)
            os._exit(CRASHED)

        recorder.insert_events = insert_then_die
    elif hasattr(recorder, "_fetch_ids_after_insert_events"):  # PostgreSQL
        written = recorder._fetch_ids_after_insert_events

        def written_then_die(*args: Any, **kwargs: Any) -> Any:
            written(*args, **kwargs)  # the rows are in, the transaction still open
            os._exit(CRASHED)

        recorder._fetch_ids_after_insert_events = written_then_die
    else:  # SQLite
        write = recorder._insert_events

        def write_then_die(*args: Any, **kwargs: Any) -> Any:
            write(*args, **kwargs)  # the rows are in, the transaction still open
            os._exit(CRASHED)

        recorder._insert_events = write_then_die


class Crasher:
    """Runs one thing in a forked child that dies at a chosen point of its transaction."""

    def __init__(self, live: Live, tmp: Path) -> None:
        self.live = live
        self.tmp = tmp
        self.crashed: list[tuple[str, str]] = []

    def fork(self, act: Act, mode: str) -> tuple[int, str]:
        live = self.live
        live.app.close()  # the server process is gone; nothing of it is shared
        others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        assert not others, f"fork only from a single-threaded process; running: {others}"
        label = self.tmp / "label"
        label.write_text("")
        pid = os.fork()
        if pid == 0:  # the child: a fresh application that dies part way through
            code = FAILED
            try:
                app = live.open()
                arm(app, mode)
                what = act(app, label.write_text)
                code = NOTHING_TO_DO if what is None else WROTE_WITHOUT_CRASH
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.restart()
        return os.waitstatus_to_exitcode(status), label.read_text()

    def restart(self) -> None:
        live = self.live
        live.app = live.open()
        live.runner = TableRunner(live.app, "T1", live.clock)

    def crash_twice(self, act: Act) -> str | None:
        """Crash ``act`` before and then after COMMIT; None if it had nothing to write."""
        store = self.live.store
        before = raw_rows(store)
        code, what = self.fork(act, "before-commit")
        if code == NOTHING_TO_DO:
            assert raw_rows(store) == before
            return None
        assert code == CRASHED and what, (code, what)
        assert raw_rows(store) == before, f"rows of an uncommitted {what!r} survived"
        code, again = self.fork(act, "after-commit")
        assert code == CRASHED and again == what, (code, what, again)
        after = raw_rows(store)
        assert after[: len(before)] == before and len(after) > len(before), what
        self.crashed.append((what, "both"))
        return what


def command(request_id: str, cmd: Any) -> Callable[[Casino], Any]:
    def run(app: Casino) -> Any:
        return app.command(request_id, cmd)

    return run


def labelled(act: Callable[[Casino], Any], label: str) -> Act:
    def run(app: Casino, note: Callable[[str], Any]) -> str | None:
        note(label)
        act(app)
        return label

    return run


def test_a_round_crashed_at_every_kind_of_event_completes_once_with_the_same_cards(
    store: Store, tmp_path: Path
) -> None:
    live = Live(store, SHOE, config={**CONFIG, "settle_batch": 2})
    sessions = {name: live.player(name, p["buy_in"]) for name, p in PLANS.items()}
    crasher = Crasher(live, tmp_path)
    actions: list[str] = []

    def crank(ms: int) -> None:
        now = live.clock.advance(ms)
        while (done := crasher.crash_twice(runner_action_labelled(now))) is not None:
            actions.append(done)

    def runner_action_labelled(now: Any) -> Act:
        def act(app: Casino, note: Callable[[str], Any]) -> str | None:
            runner = TableRunner(app, "T1")
            nxt = runner._next(now)  # the action the runner is about to send
            if nxt is None:
                return None
            note(nxt[0])
            return nxt[0] if runner.tick(now, max_actions=1) else None

        return act

    crank(0)  # the round opens
    for i, (name, p) in enumerate(PLANS.items()):
        if i == 0:  # one bet crashed twice, then retried with its request id
            bet = tc.PlaceBet(sessions[name], "T1", "main", p["main"])
            crasher.crash_twice(labelled(command("bet-ann", bet), "bet"))
            again = live.app.command("bet-ann", bet)
            assert again.bets == {"main": p["main"]}  # once, not twice
        else:
            live.bet(sessions[name], "main", p["main"])
    assert (
        live.app.session_balance(sessions["ann"]) == PLANS["ann"]["buy_in"] - PLANS["ann"]["main"]
    )
    crank(10_000)  # the deal
    assert round_one(live).phase == "insurance"
    for name, p in PLANS.items():
        if p["insurance"] is not None:
            live.decide(sessions[name], 0, "insure" if p["insurance"] else "no-insurance")
    crank(5_000)  # the insurance window closes (the peek)
    first_decision = True
    while round_one(live).phase == "step":
        k = round_one(live).step
        for name, p in PLANS.items():
            wanted = p["steps"].get(k)
            if wanted is None or wanted not in offered(live, sessions[name]):
                continue
            if first_decision:  # one decision crashed twice, then retried
                first_decision = False
                decision = tc.TableDecide(sessions[name], "T1", k, wanted)
                crasher.crash_twice(labelled(command("decide-1", decision), "decide"))
                live.app.command("decide-1", decision)
            else:
                live.decide(sessions[name], k, wanted)
        crank(5_000)  # the step closes; after the last: dealer, settlement, next round
    # every kind of runner action was crashed (request ids: ledger.tables.runner._next)
    assert any(a.startswith("open:1") for a in actions), actions
    assert any(a.endswith(":deal") for a in actions), actions
    assert any(":insurance:0:" in a for a in actions), actions
    steps = {a.split(":step:")[1].split(":")[0] for a in actions if ":step:" in a}
    closed = {k for k in round_one(live).automatic if k != "0"}
    assert steps == closed and len(closed) >= 2, actions  # every step of this round
    assert any(a.endswith(":dealer") for a in actions), actions
    assert len([a for a in actions if ":settle-batch:" in a]) == 4  # 7 seats, 2 a batch
    assert any(a.endswith(":settle") for a in actions), actions
    assert any(a.startswith("open:2") for a in actions), actions  # the next round
    assert [w for w, _ in crasher.crashed].count("bet") == 1
    assert [w for w, _ in crasher.crashed].count("decide") == 1
    # the round is the engine's, every seat settled exactly once, the books balance
    assert_round_one_matches_the_engine(live, sessions)
    counts = Counter(r.topic for r in read_rows(store.db))
    assert counts[contracts.SEAT_SETTLED] == len(PLANS)
    assert counts[contracts.TABLE_ROUND_DEALT] == 1
    assert counts[contracts.TABLE_ROUND_INSURANCE_CLOSED] == 1
    assert counts[contracts.TABLE_ROUND_SETTLED] == 1
    assert counts[contracts.TABLE_ROUND_OPENED] == 2
    assert counts[contracts.SEAT_BET_PLACED] == len(PLANS)
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings
