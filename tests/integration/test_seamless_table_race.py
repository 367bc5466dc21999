"""A seamless seat's decision recorded but not applied (issue 16): its debit goes back.

How it happens. A decision is accepted only while its step is open by the server's clock
(``Betting.decide``: phase, step, ``clock() < deadline``); the runner closes the step at
``deadline + grace_ms`` (or early), replaying every seat from its own events. In one
process the two are serial (one writer: the decision's handler runs again when the
wallet's debit is accepted and refuses a step that closed meanwhile). Across processes
(another ``serve`` worker, or ``croupier table run``, ticking the table's runner on the
same store) they only read each other's aggregates: the decision writes the seat and the
session, the close writes the table round, so neither save collides (a batch checks what
it only read before it saves, not at its commit). ``grace_ms`` is
there so that a decision that read the clock just before the deadline has committed
before the runner reads the seats; a commit later than that (a slow store, a paused
worker) lands after the runner has given the seat its automatic action for that step.
The seat then records the decision and its accepted debit (``WalletDebited``), the round
records the timeout for that seat, and the replay (``seat_of``) follows the round: the
engine stakes less than the seat was debited, and settlement rolls that debit back.

The test makes that interleaving happen deterministically: the worker serving the player
commits the decision only after a second worker's runner, on the same store, has closed
the step at its deadline plus the grace."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger.seamless.book import wallet_book
from ledger.tables.aggregates import TableSeat
from ledger.tables.context import parse_time
from ledger.tables.runner import TableRunner
from tests.helpers import ChosenSeeds
from tests.integration.table_helpers import ChosenShoes, seed_of
from tests.integration.test_seamless_table import NINE, assert_books_agree, play_out, table
from tests.seamless_support import open_casino


def test_a_double_committed_after_another_workers_runner_closed_its_step_is_rolled_back_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with table(tmp_path, NINE) as bj:
        ann = bj.join("ann")
        assert bj.bet("ann", "main", 1_000).status_code == 200
        bj.tick(10_000)
        rnd = bj.round(1)
        assert rnd.phase == "step" and rnd.step == 1 and "double" in bj.offered("ann")

        # A second worker on the same store runs the table's runner.
        other = open_casino(
            tmp_path / "data",
            bj.s.wallet.client,
            clock=bj.clock,
            seed_source=ChosenSeeds(seed_of(0)),
            shoe_maker=ChosenShoes(NINE),
        )
        try:
            other_runner = TableRunner(other, "T1", bj.clock)
            closed: list[str] = []
            casino = bj.s.casino
            real_save = casino.save

            def late_commit(*objs: Any, **kwargs: Any) -> Any:
                # The decision's transaction has read the open step (before the deadline)
                # and the wallet accepted its debit; its commit is slower than the grace.
                if not closed and any(isinstance(o, TableSeat) for o in objs):
                    open_step = bj.round(1)
                    assert open_step.deadline is not None
                    deadline = parse_time(open_step.deadline)
                    assert bj.clock() < deadline  # the decision was in time
                    grace = timedelta(milliseconds=open_step.config["grace_ms"])
                    bj.clock.now = deadline + grace
                    closed.extend(other_runner.tick())
                return real_save(*objs, **kwargs)

            casino.save = late_commit  # type: ignore[method-assign]
            try:
                r = bj.decide("ann", 1, "double")
            finally:
                del casino.save
        finally:
            other.close()
        assert closed and closed[0].endswith(":step:1:due"), closed
        assert r.status_code == 200 and r.json()["applied"] == "double", r.text

        # Recorded, debited, and not applied: the round gave ann the step's timeout (a hit).
        seat = bj.seat("ann", 1)
        rnd = bj.round(1)
        assert seat.decisions["1"][0] == "double"
        (double,) = [d for d in seat.wallet_debits if str(d[1]).startswith("double:")]
        assert int(double[2]) == 1_000 and seat.debited == 2_000
        assert rnd.automatic["1"] == [[str(seat.id), "hit", "timeout"]]
        tid = str(double[0])

        play_out(bj, 1)
        seat = bj.seat("ann", 1)
        assert seat.status == "settled"
        assert seat.result["staked"] == 1_000 and seat.debited == 1_000
        assert tid not in [d[0] for d in seat.wallet_debits]  # given back

        assert_books_agree(bj, capsys)  # wallet == croupier's log == the seat; verify passes

        # At the wallet: the double's debit applied, then rolled back, once.
        (row,) = bj.s.wallet.rows(tid)
        assert row["call"] == "debit" and row["state"] == "rolled-back", row
        rollbacks = [
            r
            for r in bj.s.wallet.admin.transactions()
            if r["call"] == "rollback" and r["player_token"] == "ann"
        ]
        assert len(rollbacks) == 1 and rollbacks[0]["amount"] == 1_000, rollbacks
        assert bj.wallet_moved("ann") == seat.credited - 1_000
        assert bj.s.wallet.admin.balance("ann") == ann.start - 1_000 + seat.credited

        # Croupier's reconciliation: the double's debit rolled back, by one rollback.
        book = [e for e in wallet_book(bj.s.casino).listed() if e.player_token == "ann"]
        (debit,) = [e for e in book if e.transaction_id == tid]
        assert debit.state == "rolled-back", debit
        backs = [e for e in book if e.call == "rollback"]
        assert len(backs) == 1 and backs[0].amount == 1_000 and backs[0].state == "rolled-back"
        assert [e.state for e in book if e.call == "debit"] == ["accepted", "rolled-back"]
