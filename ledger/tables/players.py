"""The players' table commands: bets (seed 002 "Puntare"), decisions, the connection.

Each one writes the player's own seat and game session, in one transaction (the unit of
work's), and only reads the table round. Bets are accepted only while the betting window
is open by the server's clock (or while the round waits, with no deadline, for its first
bet); decisions only for the step that is open now. A command from the table's intake is
judged by when it arrived, not when its batch ran (:mod:`ledger.tables.arrivals`).

A seamless seat (issue 16) calls the operator's wallet inside these transactions: debits
are taken by :mod:`ledger.seamless.gate` before the command that stakes runs
(:func:`ledger.seamless.port.table_stake` names the stage) and, once accepted, recorded
on the seat (:func:`record_debit`); what goes back to the wallet is queued on the session
in the same transaction as the state change (the outbox): the rollback of a debit given
back (an undo, bets cancelled, a stake the engine did not apply, a void; :func:`give_back`),
the credit of a cash-out and of a settlement's payout (:func:`credit`; a loss sends
nothing). The runner's and the operator's handlers use the same helpers.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from games.blackjack import DecisionKind, Phase, check_decision, decide, options
from games.errors import BetAboveMaximum, BetBelowMinimum
from ledger.accounts import GameSession
from ledger.commands import CloseSession, Route
from ledger.errors import SessionBusy
from ledger.money import check_amount
from ledger.seamless import port
from ledger.seamless.wire import to_wire
from ledger.tables import commands as tc
from ledger.tables.aggregates import SeatStatus, TableRound, TableSeat, chip_moves, seat_id_for
from ledger.tables.arrivals import ARRIVED
from ledger.tables.config import BET_TYPES
from ledger.tables.context import TableCache, TableHandlers, TablePorts, parse_time, seat_of
from ledger.tables.errors import (
    BettingClosed,
    ChipLimitReached,
    NothingToDouble,
    NothingToUndo,
    NotSeated,
    RepeatNotAllowed,
    SideBetWithoutMain,
    StepClosed,
    TablePaused,
    UnknownBet,
)
from ledger.unit_of_work import UnitOfWork
from wallet.protocol import Transaction, transaction_id

CODE_PREFIX = "IBJ"
"""seed 002 "Codice partita": a live round's game code starts ``IBJ-``."""


GAME = "blackjack-table"
"""The ``game`` of a session's ``last_stake`` after a table round (REPEAT reads it)."""
STAGES: dict[str, tuple[str, str | None]] = {
    "chip": ("main", None),
    "repeat": ("main", "repeat"),
    "2x": ("main", "2x"),
    "all-side-bets": ("side", "all"),
}
"""A seamless seat's debit stage per way of betting (kind, what); a side chip: side:<bet>."""


def seat_changed(seat: TableSeat, session: GameSession) -> tc.SeatChanged:
    return tc.SeatChanged(
        seated=seat.status not in (SeatStatus.CANCELLED, SeatStatus.NO_BET),
        seat_id=str(seat.id),
        code=seat.code,
        bets=seat.bets(),
        status=seat.status,
        decisions=dict(seat.decisions),
        balance=session.balance,
    )


def _undone(seat: TableSeat, everything: bool) -> int:
    """How many chips an undo takes back: the last one (a seamless seat: its last debit's
    chips), or all."""
    if everything:
        return len(seat.chips)
    if seat.wallet_debits:
        return int(seat.wallet_debits[-1][3]) or 1
    return 1


OPENINGS: ContextVar[dict[UUID, set[str]] | None] = ContextVar("table_openings", default=None)
"""Set by a bulk intake (:mod:`ledger.tables.intake`) for one batch: per round, the seats
opened so far, read once for the batch (:meth:`Players._openings`)."""


class Players(TableHandlers):
    """The players' commands (each on the player's own seat and session)."""

    def __init__(self, ports: TablePorts, cache: TableCache) -> None:
        super().__init__(ports, cache)
        self._opened: dict[UUID, tuple[int, set[str]]] = {}
        self._openings_lock = threading.Lock()

    def routes(self) -> list[Route[Any, Any]]:
        return [
            tc.PlaceBet.handled_by(self.bet),
            tc.UndoBet.handled_by(self.undo),
            tc.RepeatBets.handled_by(self.repeat),
            tc.DoubleBets.handled_by(self.double_bets),
            tc.AllSideBets.handled_by(self.all_side_bets),
            tc.TableDecide.handled_by(self.decide),
            tc.Connect.handled_by(self.connect),
            tc.Disconnect.handled_by(self.disconnect),
        ]

    # -- loading -----------------------------------------------------------------------

    @staticmethod
    def _player(uow: UnitOfWork, session_id: str) -> GameSession:
        """The session of a player's command, refused first if it is closed: a closed
        session does nothing at a table (``session-closed``, whatever the table's state or
        the seat's), as every other game's command on it."""
        session = uow.session(session_id)
        session.check_open()
        return session

    def _arrived(self) -> datetime:
        """When the command being handled arrived: its intake's stamp (:data:`ARRIVED`),
        else now (a command sent down :meth:`Casino.command` is judged as it runs)."""
        at = ARRIVED.get()
        return self.clock() if at is None else at

    def _betting(self, uow: UnitOfWork, table: str) -> TableRound:
        _, rnd = self.current(uow, table)
        if rnd is None or rnd.phase is not Phase.BETTING:
            raise BettingClosed(f"no betting window is open at table {table}", table=table)
        if rnd.paused_at is not None:
            raise TablePaused(f"table {table} is paused", table=table)
        # No deadline: the window closed with no bet and the round waits for a first one
        # (the runner then starts the timer again).
        if rnd.deadline is not None and self._arrived() >= parse_time(rnd.deadline):
            # seed 002: bets placed after the betting time are refused
            raise BettingClosed(
                f"the betting window of {rnd.code} closed at {rnd.deadline}",
                table=table,
                game_code=rnd.code,
            )
        return rnd

    def _seat(self, uow: UnitOfWork, rnd: TableRound, session: GameSession) -> TableSeat | None:
        sid = seat_id_for(rnd.id, session.id)
        opened = self._openings(uow, rnd)
        if opened is not None and str(sid) not in opened:
            return None  # no seat of this session in the round: nothing to read
        return uow.get(TableSeat, sid)

    def _openings(self, uow: UnitOfWork, rnd: TableRound) -> set[str] | None:
        """In a bulk intake (:data:`OPENINGS`), the round's seats opened so far: a seat
        not among them does not exist, so the first bet of a round reads nothing (one
        query per batch instead of one per seat). Only a command's first run trusts it:
        run again (a collision at insert: a seat opened elsewhere meanwhile), it reads."""
        known = OPENINGS.get()
        if known is None:
            return None
        runs: list[int] = uow.once("players.seat-runs", list)
        runs.append(1)
        if len(runs) > 1:
            return None
        opened = known.get(rnd.id)
        if opened is None:
            opened = known[rnd.id] = self._opened_seats(rnd)
        return opened

    def _opened_seats(self, rnd: TableRound) -> set[str]:
        """The seats opened in ``rnd`` (and others after its start) by the log's seat
        openings, read on from where this process last read them."""
        with self._openings_lock:
            after, seen = self._opened.get(rnd.id, (rnd.seats_from, set()))
            top = self.ports.last_position()  # before the read: nothing up to it is missed
            seen = seen | {str(s) for s in self.ports.seat_index(after)}
            if rnd.id not in self._opened and len(self._opened) >= 8:
                self._opened.clear()  # the tables' current rounds only
            self._opened[rnd.id] = (max(after, top), seen)
            return set(seen)

    def _open_seat(
        self, uow: UnitOfWork, rnd: TableRound, session: GameSession, seat: TableSeat | None
    ) -> TableSeat:
        """``seat``: the session's seat as the handler found it (None: none yet)."""
        if seat is None:
            session.check_idle()
            seat = TableSeat(
                round_id=str(rnd.id),
                session_id=str(session.id),
                table=rnd.table,
                code=rnd.code,
                player_id=session.player_id,
            )
            uow.add(seat)
            known = OPENINGS.get()
            if known is not None and rnd.id in known:
                known[rnd.id].add(str(seat.id))  # a second bet in the batch finds it held
        return seat

    # -- bets --------------------------------------------------------------------------

    def _check_moves(self, rnd: TableRound, seat: TableSeat | None, chips: int) -> None:
        """A seat places or takes back at most ``chip_moves_per_round`` chips a round: a
        loop of bets and undos cannot grow the log (or slow the table) without bound."""
        done = 0 if seat is None else chip_moves(seat)
        if done + chips <= self.ports.chip_moves_per_round:
            return
        if rnd.deadline is None:  # a window waiting for its first bet: a whole window
            left = rnd.settings.betting_ms / 1000
        else:
            left = (parse_time(rnd.deadline) - self.clock()).total_seconds()
        raise ChipLimitReached(
            f"{done} chips placed or taken back in {rnd.code}: at most "
            f"{self.ports.chip_moves_per_round} a round",
            retry_after=max(1, math.ceil(left)),
            game_code=rnd.code,
        )

    def _check_chip(self, rnd: TableRound, seat: TableSeat | None, bet: object, amount: int) -> str:
        if bet not in BET_TYPES:
            raise UnknownBet(f"unknown bet type {bet!r} (seed 002: {list(BET_TYPES)})")
        name = str(bet)
        bets = {} if seat is None else seat.bets()
        if name != "main" and bets.get("main", 0) == 0:
            raise SideBetWithoutMain(f"a {name} bet needs a main bet first", game_code=rnd.code)
        lo, hi = rnd.settings.limits[name]
        total = bets.get(name, 0) + amount
        if total < lo:
            raise BetBelowMinimum(total, lo)
        if total > hi:
            raise BetAboveMaximum(total, hi, what=f"{name} bet")
        return name

    def _place(
        self,
        session: GameSession,
        rnd: TableRound,
        seat: TableSeat,
        chips: list[tuple[str, int]],
        via: str,
    ) -> None:
        """Place every chip or none: the balance must cover all of them (seed 002: 2x
        "solo se il saldo copre")."""
        need = sum(a for _, a in chips)
        session.check_open()
        session.check_debit(need)
        what: str | None
        if via == "chip" and chips[0][0] != "main":
            kind, what = "side", chips[0][0]
        else:
            kind, what = STAGES[via]
        # A seamless seat: one debit for the command's chips, accepted before they land.
        stage = port.table_stake(session, rnd.code, kind, what, need)
        if not seat.chips:
            if session.open_round is None:
                session.round_opened(rnd.code)
            else:
                session.check_idle()
        for bet, amount in chips:
            session.stake(rnd.code, amount)
            seat.bet_placed(bet=bet, amount=amount, via=via)
        record_debit(seat, stage, need, len(chips))

    def bet(self, uow: UnitOfWork, cmd: tc.PlaceBet) -> tc.SeatChanged:
        session = self._player(uow, cmd.session_id)
        rnd = self._betting(uow, cmd.table)
        amount = check_amount(cmd.amount, "bet")
        seat = self._seat(uow, rnd, session)
        name = self._check_chip(rnd, seat, cmd.bet, amount)
        self._check_moves(rnd, seat, 1)
        seat = self._open_seat(uow, rnd, session, seat)
        self._place(session, rnd, seat, [(name, amount)], "chip")
        return seat_changed(seat, session)

    def undo(self, uow: UnitOfWork, cmd: tc.UndoBet) -> tc.SeatChanged:
        session = self._player(uow, cmd.session_id)
        rnd = self._betting(uow, cmd.table)
        seat = self._seat(uow, rnd, session)
        if seat is None or not seat.chips:
            raise NothingToUndo("no chip to take back", game_code=rnd.code)
        self._check_moves(rnd, seat, _undone(seat, cmd.everything))
        if session.seamless:
            return self._undo_seamless(session, rnd, seat, cmd.everything)
        while seat.chips:
            bet, amount = seat.chips[-1]
            session.refund(rnd.code, int(amount))
            seat.bet_undone(bet=bet, amount=int(amount))
            if not cmd.everything:
                break
        if not seat.chips:
            session.round_closed(rnd.code, None)
        return seat_changed(seat, session)

    def _undo_seamless(
        self, session: GameSession, rnd: TableRound, seat: TableSeat, everything: bool
    ) -> tc.SeatChanged:
        """A seamless seat takes back the chips of its last debit (one command's: all of
        a REPEAT's), or of every debit; each debit is rolled back at the wallet."""
        while seat.wallet_debits:
            last = seat.wallet_debits[-1]
            for _ in range(int(last[3])):
                bet, amount = seat.chips[-1]
                seat.bet_undone(bet=bet, amount=int(amount))
            give_back(session, seat, [last], "undo")
            if not everything:
                break
        if not seat.chips:
            session.round_closed(rnd.code, None)
        return seat_changed(seat, session)

    def repeat(self, uow: UnitOfWork, cmd: tc.RepeatBets) -> tc.SeatChanged:
        session = self._player(uow, cmd.session_id)
        rnd = self._betting(uow, cmd.table)
        seat = self._seat(uow, rnd, session)
        if seat is not None and seat.chips:
            raise RepeatNotAllowed("REPEAT only before the first chip (seed 002)")
        last = session.last_stake or {}
        if last.get("game") != GAME or last.get("table") != cmd.table or not last.get("bets"):
            raise RepeatNotAllowed("no previous round's bets at this table to repeat")
        chips = [(b, int(last["bets"][b])) for b in BET_TYPES if last["bets"].get(b)]
        self._check_all(rnd, chips)
        self._check_moves(rnd, seat, len(chips))
        seat = self._open_seat(uow, rnd, session, seat)
        self._place(session, rnd, seat, chips, "repeat")
        return seat_changed(seat, session)

    def double_bets(self, uow: UnitOfWork, cmd: tc.DoubleBets) -> tc.SeatChanged:
        session = self._player(uow, cmd.session_id)
        rnd = self._betting(uow, cmd.table)
        seat = self._seat(uow, rnd, session)
        if seat is None or not seat.chips:
            raise NothingToDouble("2x doubles the bets placed: there are none", game_code=rnd.code)
        bets = seat.bets()
        chips = [(b, bets[b]) for b in BET_TYPES if bets.get(b)]
        self._check_all(rnd, [(b, 2 * a) for b, a in chips])
        self._check_moves(rnd, seat, len(chips))
        self._place(session, rnd, seat, chips, "2x")
        return seat_changed(seat, session)

    def all_side_bets(self, uow: UnitOfWork, cmd: tc.AllSideBets) -> tc.SeatChanged:
        session = self._player(uow, cmd.session_id)
        rnd = self._betting(uow, cmd.table)
        seat = self._seat(uow, rnd, session)
        if seat is None or seat.main == 0:
            raise SideBetWithoutMain("ALL SIDE BETS needs a main bet first", game_code=rnd.code)
        limits, chip = rnd.settings.limits, rnd.settings.chip
        chips = [(b, max(chip, limits[b][0])) for b in BET_TYPES[1:]]
        for b, a in chips:
            self._check_chip(rnd, seat, b, a)
        self._check_moves(rnd, seat, len(chips))
        self._place(session, rnd, seat, chips, "all-side-bets")
        return seat_changed(seat, session)

    def _check_all(self, rnd: TableRound, totals: list[tuple[str, int]]) -> None:
        for name, total in totals:
            lo, hi = rnd.settings.limits[name]
            if total < lo:
                raise BetBelowMinimum(total, lo)
            if total > hi:
                raise BetAboveMaximum(total, hi, what=f"{name} bet")

    # -- decisions ---------------------------------------------------------------------

    def decide(self, uow: UnitOfWork, cmd: tc.TableDecide) -> tc.SeatDecided:
        session = self._player(uow, cmd.session_id)
        _, rnd = self.current(uow, cmd.table)
        wanted = Phase.INSURANCE if cmd.step == 0 else Phase.STEP
        if (
            rnd is None
            or rnd.phase is not wanted
            or (wanted is Phase.STEP and rnd.step != cmd.step)
            or rnd.paused_at is not None
            or rnd.deadline is None
            or self._arrived() >= parse_time(rnd.deadline)
        ):
            code = None if rnd is None else rnd.code
            raise StepClosed(
                f"step {cmd.step} is not open at table {cmd.table}", game_code=code, step=cmd.step
            )
        record = self._seat(uow, rnd, session)
        if record is None or not rnd.dealt_in(str(record.id)):
            raise NotSeated(f"session {session.id} has no seat in {rnd.code}", game_code=rnd.code)
        states = self.states(rnd)
        rules, shared = states.rules, states.shared
        seat = seat_of(rnd, rules, record, states=states)
        d = check_decision(shared, seat, cmd.decision)
        cost = 0
        if d.kind in (DecisionKind.DOUBLE, DecisionKind.SPLIT):
            cost = seat.main
        elif d.kind is DecisionKind.INSURE:
            cost = rules.insurance_stake(seat.main)
        funded = cost <= session.balance
        stage = None
        if cost and session.seamless:
            kind = {DecisionKind.INSURE: "insurance"}.get(d.kind, d.kind.value)
            stage = port.table_stake(session, rnd.code, kind, str(cmd.step), cost)
            funded = True  # the wallet accepted it (a refusal never gets here)
        after = decide(shared, seat, d, funded=funded)
        action = after.pending
        assert action is not None
        paid = after.cashed_out or 0 if action.kind is DecisionKind.CASH_OUT else 0
        if funded and cost:
            session.stake(rnd.code, cost)
        if paid:
            # seed 002 "Incassare": the amount on the button is paid at once
            session.credit_win(rnd.code, paid)
        record_debit(record, stage if funded and cost else None, cost, 0)
        credit(session, record, f"cash-out:{cmd.step}", paid)
        record.decided(
            step=cmd.step,
            kind=action.kind.value,
            requested=None if action.requested is None else action.requested.value,
            reason=None if action.reason is None else action.reason.value,
            cost=cost if funded else 0,
            paid=paid,
        )
        return tc.SeatDecided(
            seat_id=str(record.id),
            code=record.code,
            bets=record.bets(),
            status=record.status,
            decisions=dict(record.decisions),
            balance=session.balance,
            applied=action.kind.value,
            automatic=action.automatic,
        )

    def offered(self, uow: UnitOfWork, table: str, session_id: str) -> list[list[Any]]:
        """The options the session's seat has now (a read; no card beyond those shown)."""
        session = uow.session(session_id)
        _, rnd = self.current(uow, table)
        if rnd is None:
            return []
        record = self._seat(uow, rnd, session)
        if record is None or not rnd.dealt_in(str(record.id)):
            return []
        states = self.states(rnd)
        seat = seat_of(rnd, states.rules, record, states=states)
        return [[o.kind.value, o.amount] for o in options(states.shared, seat)]

    # -- connection (seed 002 "Disconnessione") -----------------------------------------

    def connect(self, uow: UnitOfWork, cmd: tc.Connect) -> tc.SeatChanged:
        """The player's join: a closed session is refused (``session-closed``)."""
        self._player(uow, cmd.session_id)
        return self.seat_connected(uow, cmd)

    def disconnect(self, uow: UnitOfWork, cmd: tc.Disconnect) -> tc.SeatChanged:
        """The player's leave: a closed session is refused (``session-closed``)."""
        self._player(uow, cmd.session_id)
        return self.seat_disconnected(uow, cmd)

    def seat_connected(self, uow: UnitOfWork, cmd: tc.Connect) -> tc.SeatChanged:
        """The seat's connection rule on its own, for the server's presence
        (:mod:`ledger.presence`): a connection held or released is recorded whatever the
        session's state (a closed session has no open seat, so nothing changes)."""
        return self._connection(uow, cmd, True)

    def seat_disconnected(self, uow: UnitOfWork, cmd: tc.Disconnect) -> tc.SeatChanged:
        return self._connection(uow, cmd, False)

    def _connection(
        self, uow: UnitOfWork, cmd: tc.Connect | tc.Disconnect, connected: bool
    ) -> tc.SeatChanged:
        session = uow.session(cmd.session_id)
        _, rnd = self.current(uow, cmd.table)
        seat = None if rnd is None else self._seat(uow, rnd, session)
        if rnd is None or seat is None or seat.status is not SeatStatus.OPEN:
            return tc.SeatChanged(seated=False, balance=session.balance)
        now = self.clock()
        if seat.connected != connected:
            seat.connection(connected=connected, at=now.isoformat(timespec="milliseconds"))
        betting = rnd.phase is Phase.BETTING and (
            rnd.deadline is None or now < parse_time(rnd.deadline)
        )
        if not connected and betting and seat.chips:
            # seed 002: disconnected before the betting time ends, the bets are returned
            refund = seat.debited
            if session.seamless:
                give_back(session, seat, seat.wallet_debits, "disconnected")
            else:
                session.refund(rnd.code, refund)
            seat.bets_cancelled(reason="disconnected", refunded=refund)
            session.round_closed(rnd.code, None)
        return seat_changed(seat, session)


# -- a seamless seat's wallet calls ------------------------------------------------------


def session_tag(session: GameSession) -> str:
    return str(session.id).replace("-", "")


def record_debit(seat: TableSeat, stage: str | None, amount: int, chips: int) -> None:
    """The debit the wallet accepted for this command (``stage`` None: a transfer seat)."""
    if stage is not None:
        tid = str(transaction_id(seat.code, stage))
        seat.wallet_debited(transaction_id=tid, stage=stage, amount=amount, chips=chips)


def give_back(
    session: GameSession, seat: TableSeat, debits: Iterable[list[Any]], reason: str
) -> int:
    """Refund each debit to the wallet's ledger and queue its rollback; the total."""
    total = 0
    for tid, stage, amount, _chips in list(debits):
        debit = Transaction.debit(
            session.player_id, seat.code, stage, int(amount), session.currency
        )
        assert str(debit.transaction_id) == tid, "a seat's debit id derives from its stage"
        session.refund(seat.code, int(amount))
        session.wallet_call_queued(to_wire(Transaction.rollback(debit)))
        seat.wallet_returned(transaction_id=tid, reason=reason)
        total += int(amount)
    return total


def credit(session: GameSession, seat: TableSeat, stage: str, amount: int) -> None:
    """Queue a credit (``win``, ``cash-out:<step>``) of the seat; nothing for 0."""
    if session.seamless and amount > 0:
        tag = session_tag(session)
        full = f"{stage}.{tag}" if ":" in stage else f"{stage}:{tag}"
        tx = Transaction.credit(session.player_id, seat.code, amount, session.currency, stage=full)
        session.wallet_call_queued(to_wire(tx))


def unapplied(seat: TableSeat, refund: int) -> list[list[Any]]:
    """The decisions' debits (the latest first) that make up ``refund``: the stakes of
    decisions that landed after the engine closed their step."""
    out, left = [], refund
    for d in reversed(seat.wallet_debits):
        if int(d[3]) == 0 and int(d[2]) <= left:
            out.append(d)
            left -= int(d[2])
    return out


R = TypeVar("R")


def guard_close(
    inner: Callable[[UnitOfWork, CloseSession], R],
) -> Callable[[UnitOfWork, CloseSession], R]:
    """Closing a session seated in a live round is refused (``session-busy``): the round
    finishes by itself (the runner decides for absent players, seed 002) and settles into
    the session; the operator closes it after. Other sessions close as before."""

    def close(uow: UnitOfWork, cmd: CloseSession) -> R:
        session = uow.session(cmd.session_id)
        if session.open_round is not None and session.open_round.startswith(CODE_PREFIX + "-"):
            raise SessionBusy(
                "the session is seated in a live blackjack round; it settles by itself",
                session_id=session.id,
                game_code=session.open_round,
            )
        return inner(uow, cmd)

    return close
