"""The runner's actions on a table, one command each (DESIGN §6).

Each action checks that the table is where the action expects it (round number, phase,
step) and that it is due, then makes one transition with the pure engine and records it:
open a round (and a new shoe when the last one is done), deal (or, when nobody bet, leave
the round waiting for its first bet; start the timer again once one came), close the
insurance window (the peek), close a step, play the dealer, settle a batch of seats (each
with its session), finish the round (revealing the shoe's seed after the cut-card round).
A stale
or early action raises and writes nothing; the same action sent twice (two runners, a
restart) is one request, answered from its record.
"""

from __future__ import annotations

import secrets
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
from ledger.rounds import commitment, seal_seed
from ledger.tables import commands as tc
from ledger.tables.base import KEPT_ROUNDS, NotDue, Stale, TableBase, iso, parse_time
from ledger.tables.betting import GAME
from ledger.tables.codes import TableRoundCode
from ledger.tables.replay import seat_of
from ledger.tables.seat import OPEN, TableSeat
from ledger.tables.shoe import TableShoe, shoe_id_for
from ledger.tables.table import Table, rules_of
from ledger.tables.table_round import TableRound, table_round_id_for
from ledger.tables.wallet import credit as wallet_credit
from ledger.tables.wallet import give_back, unapplied
from ledger.unit_of_work import UnitOfWork

CODE_PREFIX = "IBJ"
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, as the other codes


def game_code(now: datetime) -> str:
    """seed 002 "Codice partita": e.g. ``IBJ-20261201-113000-7K3Q9M`` (GMT start time)."""
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(6))
    return f"{CODE_PREFIX}-{now.astimezone(UTC):%Y%m%d-%H%M%S}-{suffix}"


def _automatic(actions: tuple[tuple[str, Action], ...]) -> list[list[str]]:
    """The actions the runner applied at the close (seed 002 timeouts); a player's
    unfunded double or split replaced by its fallback is on the seat's own event."""
    return [
        [sid, a.kind.value, a.reason.value] for sid, a in actions if a.reason is AutoReason.TIMEOUT
    ]


class Runner(TableBase):
    """The runner's steps, one handler per command. Each first checks that the table is
    where the step expects it (round number, not paused, then its phase)."""

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
        config = dict(table.config)
        new_shoe = prev is None or prev.next_start is None
        if new_shoe:
            shoe_number = table.shoes + 1
            sid = shoe_id_for(table.table, shoe_number)
            seed = uow.once("seed", self.seed_source)
            shoe = TableShoe(
                table=table.table,
                number=shoe_number,
                decks=int(config["decks"]),
                rules_version=rules_of(config).rules_version,
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
            config=config,
            started_at=iso(at),
            deadline=iso(at + timedelta(milliseconds=config["betting_ms"])),
            seats_from=self.last_position(),
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
        grace = timedelta(milliseconds=rnd.config["grace_ms"])
        return at >= parse_time(rnd.deadline) + grace

    def _state(
        self, uow: UnitOfWork, rnd: TableRound
    ) -> tuple[SharedRound, list[TableSeat], list[Seat]]:
        states = self.states(rnd)
        records = self.dealt_seats(uow, rnd)
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
        done = set() if pending else self._done.get(key)
        if done is None:
            if len(self._done) >= KEPT_ROUNDS:
                self._done.clear()
            done = self._done[key] = set()
        states = self.states(rnd)
        for sid in rnd.seats:
            if sid in done:
                continue
            record = uow.get(TableSeat, UUID(sid))
            assert record is not None, "a dealt seat exists"
            if not options(states.shared, seat_of(rnd, states.rules, record, states=states)):
                if not getattr(record, "_pending_events", None):
                    done.add(sid)  # committed: a batch that may not commit is not kept
            elif record.connected:
                return True
        return False

    def _next_deadline(self, rnd: TableRound, phase: Phase, at: datetime) -> str | None:
        key = {Phase.INSURANCE: "insurance_ms", Phase.STEP: "step_ms"}.get(phase)
        return None if key is None else iso(at + timedelta(milliseconds=rnd.config[key]))

    def start_betting(self, uow: UnitOfWork, cmd: tc.StartBetting) -> tc.BettingStarted:
        """A round waiting for its first bet got one: the betting timer starts again (a
        full window from now, seed 002's TIMER, for the other players and the side bets)."""
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.BETTING or rnd.deadline is not None:
            raise Stale(f"{rnd.code} is not waiting for a bet")
        if not any(s.status == OPEN and s.main > 0 for s in self.seats_of(uow, rnd)):
            raise NotDue(f"{rnd.code} is waiting for its first bet")
        deadline = iso(at + timedelta(milliseconds=rnd.config["betting_ms"]))
        rnd.betting_reopened(at=iso(at), deadline=deadline)
        return tc.BettingStarted(round=rnd.number, phase=rnd.phase, deadline=deadline)

    def deal(self, uow: UnitOfWork, cmd: tc.DealRound) -> tc.RoundDealt:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.BETTING or rnd.deadline is None:
            raise Stale(f"{rnd.code} is past betting, or waiting for a bet")
        if not self._due(rnd, at):
            raise NotDue(f"the betting window of {rnd.code} is open")
        seated = [s for s in self.seats_of(uow, rnd) if s.status == OPEN and s.main > 0]
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
        _, rnd = self._round(uow, cmd)
        if rnd.phase is not Phase.SETTLING:
            raise Stale(f"{rnd.code} is not settling")
        size = int(rnd.config["settle_batch"])
        batch = rnd.seats[cmd.batch * size : (cmd.batch + 1) * size]
        states = self.states(rnd)
        records = [r for r in (uow.get(TableSeat, UUID(s)) for s in batch) if r is not None]
        todo = [r for r in records if r.status == OPEN]
        seats = [seat_of(rnd, states.rules, r, states=states) for r in todo]
        results = settle_seats(states.shared, seats)
        for record, result in zip(todo, results, strict=True):
            session = uow.session(record.session_id)
            credit = result.returned - record.credited
            refund = record.debited - result.staked
            if credit > 0:
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
            session.round_closed(
                rnd.code, {"game": GAME, "table": rnd.table, "bets": record.bets()}
            )
        return tc.BatchSettled(round=rnd.number, batch=cmd.batch, settled=len(todo))

    def finish_round(self, uow: UnitOfWork, cmd: tc.FinishRound) -> tc.RoundFinished:
        _, rnd = self._round(uow, cmd)
        at = parse_time(cmd.at)
        if rnd.phase is not Phase.SETTLING:
            raise Stale(f"{rnd.code} is not settling")
        dealt = self.dealt_seats(uow, rnd)
        if any(r.status == OPEN for r in dealt):
            raise NotDue(f"{rnd.code} has seats still to settle")
        for late in self.seats_of(uow, rnd, skip=rnd.seated):
            if late.status == OPEN and late.chips:
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
