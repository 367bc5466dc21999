"""The table runner: advances one table whenever something is due (DESIGN §6).

``tick(now)`` looks at the table's log and sends, one after another, every action due at
``now`` (open a round, deal at the betting deadline, close the insurance window or a step
at its deadline or as soon as every connected seat has decided, play the dealer, settle
in batches, finish, open the next round), until nothing more is due. A betting window that
closes with no bet leaves the round waiting for one with no deadline (one event), and
nothing is written while nobody bets; the first bet starts the timer again. Its state is the log
alone: a restarted runner continues where the log stands, with the same cards.

Fence between two runners on one table: every action is a command whose request id names
(round, action, step, version of the table round it was computed from). Two runners
computing the same action send the same request: whichever saves first wins, the other's
save is a version conflict (on the table round, the seats, and the request record), its
retry finds the request already recorded and does nothing. An action computed from a state
that moved on is refused (``stale``) and writes nothing. So exactly one runner deals each
card and settles each seat.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from games.blackjack import Phase
from ledger.casino import Casino
from ledger.errors import IdempotencyConflict
from ledger.tables import commands as tc
from ledger.tables.base import NotDue, Stale, iso, parse_time
from ledger.tables.compose import seat_openings
from ledger.tables.seat import OPEN, TableSeat
from ledger.tables.table import Table, table_id_for
from ledger.tables.table_round import TableRound

MAX_ACTIONS = 100_000


class TableRunner:
    def __init__(self, app: Casino, table: str, clock: Callable[[], datetime] | None = None):
        self.app = app
        self.table = table
        self.clock = clock
        self._waiting: tuple[UUID, int, frozenset[UUID]] | None = None
        """(round id, notification id read up to, its seats found so far) while the
        current round waits for a first bet (:meth:`_someone_bet`)."""

    def _next(self, now: datetime) -> tuple[str, tc.RunnerCommand[Any]] | None:
        table = self.app.find(Table, table_id_for(self.table))
        if table is None:
            return None
        rnd = None
        if table.round_id is not None:
            rnd = self.app.find(TableRound, UUID(table.round_id))
        at, name = iso(now), self.table
        if rnd is None or rnd.closed:
            n = table.rounds + 1
            return f"open:{n}", tc.OpenRound(name, n, at)
        if rnd.paused_at is not None:
            return None
        key, number = f"{rnd.number}:v{rnd.version}", rnd.number
        grace = timedelta(milliseconds=rnd.config["grace_ms"])
        due = rnd.deadline is not None and now >= parse_time(rnd.deadline) + grace
        # the request ids are wire format (two runners, or a restarted one, send the same)
        if rnd.phase is Phase.BETTING and rnd.deadline is None:
            # waiting for a first bet: nothing is written until one comes
            if not self._someone_bet(rnd):
                return None
            return f"{key}:start", tc.StartBetting(name, number, at)
        if rnd.phase is Phase.BETTING:
            return (f"{key}:deal", tc.DealRound(name, number, at)) if due else None
        when = "due" if due else "early"
        if rnd.phase is Phase.INSURANCE:
            return f"{key}:insurance:0:{when}", tc.CloseInsurance(name, number, at, not due)
        if rnd.phase is Phase.STEP:
            cmd = tc.CloseStep(name, number, at, rnd.step, not due)
            return f"{key}:step:{rnd.step}:{when}", cmd
        if rnd.phase is Phase.DEALER:
            return f"{key}:dealer", tc.PlayDealer(name, number, at)
        if rnd.phase is Phase.SETTLING:
            b = self._batch_due(rnd)
            if b is not None:
                return f"{number}:settle-batch:{b}", tc.SettleBatch(name, number, at, b)
            return f"{key}:settle", tc.FinishRound(name, number, at)
        return None

    def _someone_bet(self, rnd: TableRound) -> bool:
        """Whether a seat of this waiting round holds a main bet. Asked every tick while
        the round waits, so it reads only the seat openings written since the last look
        (the round's own, by the round id in the opening event) and loads only the
        round's seats: an idle table costs a small query a tick, whatever else the log
        holds."""
        rid = str(rnd.id)
        if self._waiting is None or self._waiting[0] != rnd.id:
            self._waiting = (rnd.id, rnd.seats_from, frozenset())
        _, after, seats = self._waiting
        top = int(self.app.recorder.max_notification_id() or 0)
        found = set(seats)
        for note in seat_openings(self.app, after):
            top = max(top, note.id)
            if getattr(self.app.mapper.to_domain_event(note), "round_id", None) == rid:
                found.add(UUID(str(note.originator_id)))
        self._waiting = (rnd.id, top, frozenset(found))
        for sid in found:
            seat = self.app.find(TableSeat, sid)
            if seat is not None and seat.status == OPEN and seat.main > 0:
                return True
        return False

    def _batch_due(self, rnd: TableRound) -> int | None:
        """The first settlement batch not yet settled. A batch settles in one transaction,
        so its first seat tells whether the whole batch is done."""
        size = int(rnd.config["settle_batch"])
        for b in range(-(-len(rnd.seats) // size)):
            first = self.app.find(TableSeat, UUID(rnd.seats[b * size]))
            if first is not None and first.status == OPEN:
                return b
        return None

    def _send(self, request_id: str, cmd: tc.RunnerCommand[Any]) -> bool:
        """True if the action was applied (or had been, by this or another runner)."""
        try:
            self.app.command(request_id, cmd)
        except (NotDue, Stale, IdempotencyConflict):
            return False
        return True

    def tick(self, now: datetime | None = None, max_actions: int = MAX_ACTIONS) -> list[str]:
        """Send every action due at ``now`` (default: the runner's clock), at most
        ``max_actions``; return their request ids."""
        if now is None:
            assert self.clock is not None, "a runner without a clock needs now"
            now = self.clock()
        done: list[str] = []
        while len(done) < max_actions:
            nxt = self._next(now)
            if nxt is None:
                break
            request_id, cmd = nxt
            if not self._send(request_id, cmd):
                break
            done.append(request_id)
        return done

    def _round(self) -> TableRound | None:
        table = self.app.find(Table, table_id_for(self.table))
        if table is None or table.round_id is None:
            return None
        return self.app.find(TableRound, UUID(table.round_id))


def run_forever(
    runner: TableRunner,
    interval: float,
    stop: Callable[[], bool],
    sleep: Callable[[float], None],
) -> int:
    """``croupier table run``: tick every ``interval`` seconds until ``stop()``; return the
    number of actions taken. (The sleep is injected: tests pass one that does not wait.)"""
    actions = 0
    while not stop():
        actions += len(runner.tick())
        sleep(interval)
    return actions
