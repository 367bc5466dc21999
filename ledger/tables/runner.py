"""The table runner: its steps (one command each) and the loop that sends them (DESIGN §6).

**Steps.** Each checks that the table is where the step expects it (round number, phase,
step) and that it is due, then makes one transition with the pure engine and records it:
open a round (and a new shoe when the last one is done), deal (or, when nobody bet, leave
the round waiting for its first bet; start the timer again once one came), close the
insurance window (the peek), close a step, play the dealer, settle a batch of seats (each
with its session), finish the round (revealing the shoe's seed after the cut-card round).
A stale or early step raises and writes nothing; the same step sent twice (two runners, a
restart) is one request, answered from its record.

**The loop.** :meth:`TableRunner.tick` looks at the table's log and sends, one after
another, every step due at ``now`` until nothing more is due. A betting window that closes
with no bet leaves the round waiting for one with no deadline (one event), and nothing is
written while nobody bets; the first bet starts the timer again. Its state is the log
alone: a restarted runner continues where the log stands, with the same cards. A window
past its deadline stays open while a command that arrived before the deadline still waits
in this process's intake, for at most :data:`~ledger.tables.arrivals.MAX_HOLD`
(:mod:`ledger.tables.arrivals`).

**The fence** between two runners on one table: every step is a command whose request id
names (round, action, step, version of the table round it was computed from). Two runners
computing the same step send the same request: whichever saves first wins, the other's
save is a version conflict (on the table round, the seats, and the request record), its
retry finds the request already recorded and does nothing. A step computed from a state
that moved on is refused (``stale``) and writes nothing. So exactly one runner deals each
card and settles each seat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from games.blackjack import (
    Phase,
    Seat,
    SharedRound,
    close_insurance,
    close_step,
    deal,
    options,
    play_dealer,
    settle_seats,
)
from games.blackjack.decisions import Action, AutoReason
from ledger.casino import Casino
from ledger.commands import Route
from ledger.errors import IdempotencyConflict
from ledger.rounds import commitment, random_code, seal_seed
from ledger.tables import commands as tc
from ledger.tables.aggregates import (
    SeatStatus,
    Table,
    TableRound,
    TableRoundCode,
    TableSeat,
    TableShoe,
    shoe_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.arrivals import MAX_HOLD
from ledger.tables.context import (
    KEPT_ROUNDS,
    TableHandlers,
    iso,
    parse_time,
    seat_of,
    seat_openings,
)
from ledger.tables.errors import NotDue, Stale
from ledger.tables.players import CODE_PREFIX, GAME, give_back, unapplied
from ledger.tables.players import credit as wallet_credit
from ledger.unit_of_work import UnitOfWork

MAX_ACTIONS = 100_000

_WINDOWS = (Phase.BETTING, Phase.INSURANCE, Phase.STEP)
"""The phases whose close a command that arrived in time holds (:meth:`TableRunner._held`)."""

log = logging.getLogger("croupier.tables")


def game_code(now: datetime) -> str:
    """seed 002 "Codice partita": e.g. ``IBJ-20261201-113000-7K3Q9M`` (GMT start time)."""
    return f"{CODE_PREFIX}-{now.astimezone(UTC):%Y%m%d-%H%M%S}-{random_code(6)}"


def _automatic(actions: tuple[tuple[str, Action], ...]) -> list[list[str]]:
    """The actions the runner applied at the close (seed 002 timeouts); a player's
    unfunded double or split replaced by its fallback is on the seat's own event."""
    return [
        [sid, a.kind.value, a.reason.value] for sid, a in actions if a.reason is AutoReason.TIMEOUT
    ]


class RunnerSteps(TableHandlers):
    """The runner's steps, one handler per command. Each first checks that the table is
    where the step expects it (round number, not paused, then its phase)."""

    def routes(self) -> list[Route[Any, Any]]:
        return [
            tc.OpenRound.handled_by(self.open_round),
            tc.StartBetting.handled_by(self.start_betting),
            tc.DealRound.handled_by(self.deal),
            tc.CloseInsurance.handled_by(self.close_insurance),
            tc.CloseStep.handled_by(self.close_step),
            tc.PlayDealer.handled_by(self.play_dealer),
            tc.SettleBatch.handled_by(self.settle_batch),
            tc.FinishRound.handled_by(self.finish_round),
        ]

    def _round(self, uow: UnitOfWork, cmd: tc.RunnerCommand[Any]) -> tuple[Table, TableRound]:
        table, rnd = self.current(uow, cmd.table)
        if rnd is None or rnd.number != cmd.number:
            raise Stale(f"round {cmd.number} is not the current round of {cmd.table}")
        if rnd.paused_at is not None:
            raise NotDue(f"table {cmd.table} is paused")
        return table, rnd

    # -- opening -----------------------------------------------------------------------

    def open_round(self, uow: UnitOfWork, cmd: tc.OpenRound) -> tc.RoundOpened:
        at, number = parse_time(cmd.at), cmd.number
        table, prev = self.current(uow, cmd.table)
        if table.rounds != number - 1 or (prev is not None and not prev.closed):
            raise Stale(f"round {number} of {table.table} cannot open now")
        settings = table.settings
        new_shoe = prev is None or prev.next_start is None
        if new_shoe:
            shoe_number = table.shoes + 1
            sid = shoe_id_for(table.table, shoe_number)
            seed = uow.once("seed", self.ports.seed_source)
            shoe = TableShoe(
                table=table.table,
                number=shoe_number,
                decks=settings.decks,
                rules_version=settings.rules().rules_version,
                commitment=commitment(seed),
                sealed_seed=seal_seed(self.keyring.sealing_key, sid, seed),
                sealing_kid=self.keyring.sealing_kid,
                shuffled_at=iso(at),
            )
            uow.add(shoe)
            table.shoe_started(number=shoe_number, shoe_id=str(shoe.id))
            start = 0
        else:
            assert prev is not None and prev.next_start is not None
            shoe_number, sid, start = prev.shoe_number, UUID(prev.shoe_id), prev.next_start
        code = game_code(at)
        rnd = TableRound(
            table=table.table,
            number=number,
            code=code,
            currency=table.currency,
            shoe_id=str(sid),
            shoe_number=shoe_number,
            start=start,
            config=dict(table.config),
            started_at=iso(at),
            deadline=iso(at + timedelta(milliseconds=settings.betting_ms)),
            seats_from=self.ports.last_position(),
        )
        rnd_id = str(rnd.id)
        assert rnd_id == str(table_round_id_for(table.table, number))
        uow.add(rnd, TableRoundCode(code=code, table=table.table, number=number, round_id=rnd_id))
        table.round_started(number=number, round_id=str(rnd.id), code=code)
        return tc.RoundOpened(round=number, code=code, phase=rnd.phase)

    # -- windows -----------------------------------------------------------------------

    def _due(self, rnd: TableRound, at: datetime) -> bool:
        """Past the deadline (plus the grace that lets in-flight commands land)."""
        assert rnd.deadline is not None
        grace = timedelta(milliseconds=rnd.settings.grace_ms)
        return at >= parse_time(rnd.deadline) + grace

    def _state(
        self, uow: UnitOfWork, rnd: TableRound
    ) -> tuple[SharedRound, list[TableSeat], list[Seat]]:
        states = self.states(rnd)
        records = self.dealt_seats(uow, rnd, read=True)  # the closes change no seat
        seats = [seat_of(rnd, states.rules, r, states=states) for r in records]
        return states.shared, records, seats

    def _deciding(self, uow: UnitOfWork, rnd: TableRound) -> bool:
        """Whether a connected seat still has a choice in the open window (seed 002 timer:
        a window closes at once when nobody is left to decide).

        The runner asks every tick while a window is open, so this does not replay every
        seat each time: a seat found with no choice left (it decided, or its hands are
        done) stays so for this round version (only its own decisions change it), and is
        remembered (``_done``, per committed round version, and only once its state is
        committed: not a decision of this same batch); the first connected seat
        with a choice answers. Over a window each seat is replayed about once, not once
        per tick. A disconnected seat is looked at again each time (it may come back)."""
        pending = bool(getattr(rnd, "_pending_events", None))
        key = (rnd.id, rnd.version)
        done = set() if pending else self.cache.done.get(key)
        if done is None:
            if len(self.cache.done) >= KEPT_ROUNDS:
                self.cache.done.clear()
            done = self.cache.done[key] = set()
        states = self.states(rnd)
        for sid in rnd.seats:
            if sid in done:
                continue
            record = uow.read(TableSeat, UUID(sid))
            assert record is not None, "a dealt seat exists"
            if not options(states.shared, seat_of(rnd, states.rules, record, states=states)):
                if not getattr(record, "_pending_events", None):
                    done.add(sid)  # committed: a batch that may not commit is not kept
            elif record.connected:
                return True
        return False

    def _next_deadline(self, rnd: TableRound, phase: Phase, at: datetime) -> str | None:
        ms = {Phase.INSURANCE: rnd.settings.insurance_ms, Phase.STEP: rnd.settings.step_ms}
        return None if phase not in ms else iso(at + timedelta(milliseconds=ms[phase]))

    def start_betting(self, uow: UnitOfWork, cmd: tc.StartBetting) -> tc.BettingStarted:
        """A round waiting for its first bet got one: the betting timer starts again (a
        full window from now, seed 002's TIMER, for the other players and the side bets)."""
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.BETTING or rnd.deadline is not None:
            raise Stale(f"{rnd.code} is not waiting for a bet")
        seats = self.seats_of(uow, rnd, read=True)
        if not any(s.status is SeatStatus.OPEN and s.main > 0 for s in seats):
            raise NotDue(f"{rnd.code} is waiting for its first bet")
        deadline = iso(at + timedelta(milliseconds=rnd.settings.betting_ms))
        rnd.betting_reopened(at=iso(at), deadline=deadline)
        return tc.BettingStarted(round=rnd.number, phase=rnd.phase, deadline=deadline)

    def deal(self, uow: UnitOfWork, cmd: tc.DealRound) -> tc.RoundDealt:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.BETTING or rnd.deadline is None:
            raise Stale(f"{rnd.code} is past betting, or waiting for a bet")
        if not self._due(rnd, at):
            raise NotDue(f"the betting window of {rnd.code} is open")
        records = self.seats_of(uow, rnd, read=True)  # the deal changes the round only
        seated = [s for s in records if s.status is SeatStatus.OPEN and s.main > 0]
        if not seated:
            # Nobody bet: the round stays open for bets with no deadline and no card used;
            # nothing more is written until a bet comes (then the runner's "start").
            rnd.betting_waiting(at=iso(at))
            return tc.RoundDealt(round=rnd.number, phase=rnd.phase, seats=0, waiting=True)
        states = self.states(rnd)
        base = states.shared
        seats = [seat_of(rnd, states.rules, s, states=states) for s in seated]
        shoe = self.shoe(uow, rnd)
        dealt, _ = deal(base, seats, shoe)
        assert dealt.up is not None
        rnd.dealt(
            at=iso(at),
            seats=[str(s.id) for s in seated],
            player_cards=[str(c) for c in dealt.player_cards],
            up=str(dealt.up),
            phase=dealt.phase.value,
            step=dealt.step,
            deadline=self._next_deadline(rnd, dealt.phase, at),
        )
        return tc.RoundDealt(round=rnd.number, phase=rnd.phase, seats=len(seated))

    def close_insurance(self, uow: UnitOfWork, cmd: tc.CloseInsurance) -> tc.InsuranceClosed:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.INSURANCE:
            raise Stale(f"{rnd.code} has no insurance window open")
        if not self._due(rnd, at) and (not cmd.early or self._deciding(uow, rnd)):
            raise NotDue(f"the insurance window of {rnd.code} is open")
        shared, _, seats = self._state(uow, rnd)
        after, _, closed = close_insurance(shared, seats, self.shoe(uow, rnd))
        # a dealer blackjack at the peek: the engine's round is settled, the table's seats
        # are still to be paid
        phase = Phase.SETTLING if after.phase is Phase.SETTLED else after.phase
        rnd.insurance_closed(
            at=iso(at),
            automatic=_automatic(closed.actions),
            dealer_blackjack=closed.dealer_blackjack,
            hole=None if after.hole is None else str(after.hole),
            phase=phase.value,
            step=after.step,
            deadline=self._next_deadline(rnd, phase, at),
        )
        return tc.InsuranceClosed(
            round=rnd.number, phase=rnd.phase, dealer_blackjack=closed.dealer_blackjack
        )

    def close_step(self, uow: UnitOfWork, cmd: tc.CloseStep) -> tc.StepClosed:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.STEP or rnd.step != cmd.step:
            raise Stale(f"step {cmd.step} of {rnd.code} is not open")
        if not self._due(rnd, at) and (not cmd.early or self._deciding(uow, rnd)):
            raise NotDue(f"step {cmd.step} of {rnd.code} is open")
        shared, _, seats = self._state(uow, rnd)
        after, _, closed = close_step(shared, seats, self.shoe(uow, rnd))
        rnd.step_closed(
            at=iso(at),
            closed=closed.step,
            card=None if closed.card is None else str(closed.card),
            automatic=_automatic(closed.actions),
            phase=after.phase.value,
            step=after.step if after.phase is Phase.STEP else 0,
            deadline=self._next_deadline(rnd, after.phase, at),
        )
        return tc.StepClosed(round=rnd.number, phase=rnd.phase, step=closed.step)

    def play_dealer(self, uow: UnitOfWork, cmd: tc.PlayDealer) -> tc.DealerPlayed:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.DEALER:
            raise Stale(f"{rnd.code} is not at the dealer's turn")
        after = play_dealer(self.states(rnd).shared, self.shoe(uow, rnd))
        assert after.hole is not None
        rnd.dealer_played(
            at=iso(at), hole=str(after.hole), draws=[str(c) for c in after.dealer_draws]
        )
        return tc.DealerPlayed(round=rnd.number, phase=rnd.phase)

    # -- settlement --------------------------------------------------------------------

    def settle_batch(self, uow: UnitOfWork, cmd: tc.SettleBatch) -> tc.BatchSettled:
        """Settle the open seats of batch ``cmd.batch`` in one transaction. Per seat, the
        fewest signed events that keep every guarantee: the seat's ``Settled`` (its result,
        what audit-cli re-executes) and one session event: ``RoundSettled`` when the
        engine returns more than the seat was already paid (the money movement with the
        session's new balance, and the round's close: the session is free for its next
        round, with REPEAT's last stake), else ``RoundClosed``. A seamless session's win
        stays ``WinCredited`` (its wallet call is queued beside it) then ``RoundClosed``.
        The round's shared states are computed once for the batch; each seat is
        replayed by the engine from them."""
        _, rnd = self._round(uow, cmd)
        if rnd.phase is not Phase.SETTLING:
            raise Stale(f"{rnd.code} is not settling")
        size = rnd.settings.settle_batch
        batch = rnd.seats[cmd.batch * size : (cmd.batch + 1) * size]
        states = self.states(rnd)
        records = [r for r in (uow.get(TableSeat, UUID(s)) for s in batch) if r is not None]
        todo = [r for r in records if r.status is SeatStatus.OPEN]
        seats = [seat_of(rnd, states.rules, r, states=states) for r in todo]
        results = settle_seats(states.shared, seats)
        game = {"game": GAME, "table": rnd.table}
        for record, result in zip(todo, results, strict=True):
            session = uow.session(record.session_id)
            credit = result.returned - record.credited
            refund = record.debited - result.staked
            # A win on the session's own balance is credited by the event that closes the
            # round (below); a seamless session's credit goes to the operator's wallet.
            combined = credit > 0 and not session.seamless
            if credit > 0 and not combined:
                session.credit_win(rnd.code, credit)
                wallet_credit(session, record, "win", credit)
            if refund > 0 and session.seamless:
                # its decisions' debits the engine did not apply are rolled back
                refund = give_back(session, record, unapplied(record, refund), "not-applied")
            elif refund > 0:
                # A decision's stake the engine did not apply (it landed after its step
                # closed): it goes back, so the books follow the engine.
                session.refund(rnd.code, refund)
            record.settled(
                credited=max(credit, 0),
                refunded=max(refund, 0),
                result={
                    "staked": result.staked,
                    "returned": result.returned,
                    "hands": [[h.outcome.value, h.stake, h.payout] for h in result.hands],
                    "insurance": result.insurance,
                    "sides": [[s.bet.value, s.stake, s.outcome, s.payout] for s in result.sides],
                },
            )
            last = {**game, "bets": record.bets()}
            if combined:
                session.settle_round(rnd.code, credit, last)
            else:
                session.round_closed(rnd.code, last)
        return tc.BatchSettled(round=rnd.number, batch=cmd.batch, settled=len(todo))

    def finish_round(self, uow: UnitOfWork, cmd: tc.FinishRound) -> tc.RoundFinished:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.SETTLING:
            raise Stale(f"{rnd.code} is not settling")
        dealt = self._settled_seats(uow, rnd)
        if dealt is None:
            raise NotDue(f"{rnd.code} has seats still to settle")
        for late in self.seats_of(uow, rnd, skip=rnd.seated):
            if late.status is SeatStatus.OPEN and late.chips:
                # A bet that landed after the deal read the seats: it never played.
                session = uow.session(late.session_id)
                if session.seamless:
                    give_back(session, late, late.wallet_debits, "after-the-deal")
                else:
                    session.refund(rnd.code, late.debited)
                late.bets_cancelled(reason="after-the-deal", refunded=late.debited)
                session.round_closed(rnd.code, None)
        shoe = self.shoe(uow, rnd)
        position = self.states(rnd).shared.next_position
        # seed 002: the round that brings out the cut card finishes; then a new shoe
        next_start = None if position - 1 >= shoe.cut_index else position
        staked = sum(int(r.result["staked"]) for r in dealt)
        returned = sum(int(r.result["returned"]) for r in dealt)
        rnd.settled(
            at=iso(at),
            seats=len(dealt),
            totals={"staked": staked, "returned": returned},
            next_start=next_start,
        )
        if next_start is None:
            record = uow.get(TableShoe, UUID(rnd.shoe_id))
            assert record is not None
            record.revealed(seed=self.seed_of(record).hex(), rounds=rnd.number, last_round=rnd.code)
        return tc.RoundFinished(round=rnd.number, phase=rnd.phase, next_start=next_start)

    def _settled_seats(self, uow: UnitOfWork, rnd: TableRound) -> list[TableSeat] | None:
        """Every dealt seat, all settled (None if one is still open), only read. A seat
        this process holds as settled is taken as held, without the copy a unit of work
        makes of what it may change: a settled seat never changes again in a settling
        round (only a void does, and a voided round is not settling). Any other seat is
        loaded through the unit of work (from the store if the held one is behind)."""
        peek = self.ports.peek
        out: list[TableSeat] = []
        for sid in rnd.seats:
            seat = None if peek is None else peek(UUID(sid))
            if not isinstance(seat, TableSeat) or seat.status is not SeatStatus.SETTLED:
                seat = uow.get(TableSeat, UUID(sid))
                assert seat is not None, "a dealt seat exists"
                if seat.status is SeatStatus.OPEN:
                    return None
            out.append(seat)
        return out


# -- the loop ------------------------------------------------------------------------------


class TableRunner:
    def __init__(
        self,
        app: Casino,
        table: str,
        clock: Callable[[], datetime] | None = None,
        read_ahead: bool = False,
    ):
        self.app = app
        self.table = table
        self.clock = clock
        self.read_ahead = read_ahead
        """Read each settlement batch's seats and sessions ahead, in a query per 400
        (:meth:`_read_ahead`): a tables process's (``CROUPIER_ROLE=tables``), whose cache
        a front's writes leave behind. In one process the cache is the store's. (Read
        ahead at each window's close too, it made the closes later, not sooner:
        docs/performance/table-command-budget.md.)"""
        self._settled: tuple[UUID | None, int] = (None, 0)
        """(round id, how many of its first dealt seats are settled) while it settles."""
        self._waiting: tuple[UUID, int, frozenset[UUID]] | None = None
        """(round id, notification id read up to, its seats found so far) while the
        current round waits for a first bet (:meth:`_someone_bet`)."""

    def _next(self, now: datetime) -> tuple[str, tc.RunnerCommand[Any]] | None:
        # only read here (peek: no copy); the command sent reads them again to change them
        table = self.app.peek(Table, table_id_for(self.table))
        if table is None:
            return None
        rnd = None
        if table.round_id is not None:
            rnd = self.app.peek(TableRound, UUID(table.round_id))
        at, name = iso(now), self.table
        if rnd is None or rnd.closed:
            n = table.rounds + 1
            return f"open:{n}", tc.OpenRound(name, n, at)
        if rnd.paused_at is not None:
            return None
        key, number = f"{rnd.number}:v{rnd.version}", rnd.number
        grace = timedelta(milliseconds=rnd.settings.grace_ms)
        due = rnd.deadline is not None and now >= parse_time(rnd.deadline) + grace
        # the request ids are wire format (two runners, or a restarted one, send the same)
        if rnd.phase is Phase.BETTING and rnd.deadline is None:
            # waiting for a first bet: nothing is written until one comes
            if not self._someone_bet(rnd):
                return None
            return f"{key}:start", tc.StartBetting(name, number, at)
        if due and rnd.phase in _WINDOWS and self._held(rnd, now):
            return None  # commands that arrived in time still wait for their batch
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
                if self.read_ahead:
                    size = rnd.settings.settle_batch
                    batch = [UUID(s) for s in rnd.seats[b * size : (b + 1) * size]]
                    self._read_ahead(batch)
                return f"{number}:settle-batch:{b}", tc.SettleBatch(name, number, at, b)
            return f"{key}:settle", tc.FinishRound(name, number, at)
        return None

    def _read_ahead(self, seats: list[UUID]) -> None:
        """Bring a settlement batch's seats, then the sessions of those still open, into
        the cache at the store's newest in a query per 400 each (``Casino.refresh``): a
        front wrote their bets, decisions and money, and the batch would otherwise read
        each one alone, a query or two per seat and per session. Only a shortcut: the
        batch checks what it read against the store as ever."""
        try:
            self.app.refresh(seats)
            sessions = set()
            for sid in seats:
                seat = self.app.cached(sid)
                if isinstance(seat, TableSeat) and seat.status is SeatStatus.OPEN:
                    sessions.add(UUID(str(seat.session_id)))
            self.app.refresh(sessions)
        except Exception as e:  # the store, a row it refuses: the batch's reads tell
            log.warning("table %s: a settlement batch not read ahead: %r", self.table, e)

    def _held(self, rnd: TableRound, now: datetime) -> bool:
        """Whether the window's close waits: a command that arrived before its deadline
        still waits in this process's intake (:mod:`ledger.tables.arrivals`) or, on
        PostgreSQL, in another worker's (:mod:`ledger.tables.holds`), and the deadline is
        less than :data:`MAX_HOLD` past its grace."""
        arrivals = self.app.table_arrivals
        if arrivals is None or rnd.deadline is None:
            return False
        deadline = parse_time(rnd.deadline)
        grace = timedelta(milliseconds=rnd.settings.grace_ms)
        if now >= deadline + grace + MAX_HOLD:
            return False
        if arrivals.waiting_before(self.table, deadline):
            return True
        holds = self.app.table_holds
        return holds is not None and holds.elsewhere_before(self.table, deadline)

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
            if seat is not None and seat.status is SeatStatus.OPEN and seat.main > 0:
                return True
        return False

    def _batch_due(self, rnd: TableRound) -> int | None:
        """The batch of the first dealt seat not yet settled (None: every seat is). A
        batch settles in one transaction, and a settled seat stays settled while its
        round settles, so the seats found settled are not looked at again
        (``_settled``: the round and how many of its first dealt seats are settled): over
        a round each seat is looked at about once, not once per batch. A seat the process
        holds as settled is taken as held; any other is read from the store."""
        size = rnd.settings.settle_batch
        start = self._settled[1] if self._settled[0] == rnd.id else 0
        for i in range(start, len(rnd.seats)):
            sid = UUID(rnd.seats[i])
            held = self.app.cached(sid)
            if isinstance(held, TableSeat) and held.status is SeatStatus.SETTLED:
                continue
            seat = self.app.find(TableSeat, sid)
            if seat is not None and seat.status is SeatStatus.OPEN:
                self._settled = (rnd.id, i)
                return i // size
        self._settled = (rnd.id, len(rnd.seats))
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
            if request_id in done:
                break  # answered from its record and nothing moved: no busy loop
            if not self._send(request_id, cmd):
                break
            done.append(request_id)
        return done


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
