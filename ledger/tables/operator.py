"""Handlers of the operator's table commands: create, configure, pause, resume, void.

Void (seed 002 "Errori"/"Malfunzionamento"): every seat's stakes are refunded and every
payment of the round reversed (a cash-out, a settlement), whether the round is open or
settled; voiding a voided round returns the first void. The shoe after a void: it goes on
from the position after the last card the voided round had taken (the cards already shown
stay out of play, as a dealer would burn them), so no card is dealt twice and the shoe's
seed stays sealed until its cut-card round; a voided round that had brought out the cut
card ends the shoe (its seed is revealed and the next round takes a new shoe).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from games.blackjack import Phase
from ledger.accounts import GameSession
from ledger.commands import Route
from ledger.errors import InvalidRequest
from ledger.tables import commands as tc
from ledger.tables.aggregates import (
    SeatStatus,
    Table,
    TableRound,
    TableSeat,
    TableShoe,
    table_id_for,
)
from ledger.tables.config import TableConfig
from ledger.tables.context import TableHandlers, iso, parse_time
from ledger.tables.errors import TableExists, TableNotFound
from ledger.tables.players import give_back
from ledger.unit_of_work import UnitOfWork


class Operator(TableHandlers):
    """The operator's commands on a table."""

    def routes(self) -> list[Route[Any, Any]]:
        return [
            tc.CreateTable.handled_by(self.create),
            tc.ConfigureTable.handled_by(self.configure),
            tc.PauseTable.handled_by(self.pause),
            tc.ResumeTable.handled_by(self.resume),
            tc.VoidTableRound.handled_by(self.void),
        ]

    def create(self, uow: UnitOfWork, cmd: tc.CreateTable) -> tc.TableCreated:
        if uow.get(Table, table_id_for(cmd.table)) is not None:
            raise TableExists(f"table {cmd.table} exists", table=cmd.table)
        currency = Table.check_currency(cmd.currency)
        config = TableConfig.check(cmd.config).wire()
        table = Table(table=cmd.table, currency=currency, config=config)
        uow.add(table)
        return tc.TableCreated(table=cmd.table, currency=currency, config=config)

    def configure(self, uow: UnitOfWork, cmd: tc.ConfigureTable) -> tc.TableConfigured:
        table = self.table(uow, cmd.table)
        config = TableConfig.check(cmd.config).wire()
        table.configured(config=config)
        return tc.TableConfigured(
            table=cmd.table, config=config, applies_from_round=table.rounds + 1
        )

    def pause(self, uow: UnitOfWork, cmd: tc.PauseTable) -> tc.TablePaused:
        _, rnd = self.current(uow, cmd.table)
        if rnd is not None and not rnd.closed and rnd.paused_at is None:
            rnd.paused(at=iso(self.clock()), reason=cmd.reason)
        paused = rnd is not None and rnd.paused_at is not None
        return tc.TablePaused(table=cmd.table, paused=paused)

    def resume(self, uow: UnitOfWork, cmd: tc.ResumeTable) -> tc.TablePaused:
        _, rnd = self.current(uow, cmd.table)
        if rnd is not None and rnd.paused_at is not None:
            now = self.clock()
            deadline = rnd.deadline
            if deadline is not None:
                # the deadline was frozen: it moves by the length of the pause
                deadline = iso(parse_time(deadline) + (now - parse_time(rnd.paused_at)))
            rnd.resumed(at=iso(now), deadline=deadline)
        deadline = None if rnd is None else rnd.deadline
        return tc.TablePaused(table=cmd.table, paused=False, deadline=deadline)

    def void(self, uow: UnitOfWork, cmd: tc.VoidTableRound) -> tc.TableRoundVoided:
        self.table(uow, cmd.table)
        rnd = self.round_by_code(uow, cmd.table, cmd.code)
        if rnd is None:
            raise TableNotFound(f"no round {cmd.code!r} at table {cmd.table}", game_code=cmd.code)
        if rnd.phase is Phase.VOIDED:
            return tc.TableRoundVoided(
                code=rnd.code,
                already_voided=True,
                refunded=rnd.refunded,
                reversed_win=rnd.reversed_win,
            )
        was_open = not rnd.closed
        refunded = reversed_win = 0
        for seat in self.seats_of(uow, rnd):
            if seat.status in (SeatStatus.CANCELLED, SeatStatus.NO_BET, SeatStatus.VOIDED):
                continue
            r, w = self._void_seat(uow, rnd, seat, cmd, was_open)
            refunded += r
            reversed_win += w
        now = self.clock()
        if was_open:
            next_start = rnd.start if rnd.up is None else self._position_after(rnd)
            shoe = self.shoe(uow, rnd)
            if next_start > shoe.cut_index:
                record = uow.get(TableShoe, UUID(rnd.shoe_id))
                assert record is not None
                record.revealed(
                    seed=self.seed_of(record).hex(), rounds=rnd.number, last_round=rnd.code
                )
                next_start_or_none: int | None = None
            else:
                next_start_or_none = next_start
        else:
            next_start_or_none = rnd.next_start
        rnd.voided(
            at=iso(now),
            reason=cmd.reason,
            incident_id=cmd.incident_id,
            refunded=refunded,
            reversed_win=reversed_win,
            next_start=next_start_or_none,
        )
        return tc.TableRoundVoided(
            code=rnd.code, already_voided=False, refunded=refunded, reversed_win=reversed_win
        )

    @staticmethod
    def _position_after(rnd: TableRound) -> int:
        return rnd.start + 4 + len(rnd.step_cards) + len(rnd.dealer_draws)

    def _void_seat(
        self,
        uow: UnitOfWork,
        rnd: TableRound,
        seat: TableSeat,
        cmd: tc.VoidTableRound,
        was_open: bool,
    ) -> tuple[int, int]:
        session: GameSession = uow.session(seat.session_id)
        refund, reverse = seat.debited, seat.credited
        if session.seamless:
            # Every accepted debit of the seat is rolled back at the wallet. A credit
            # already sent there cannot be reversed through the wallet protocol (as a
            # seamless Red Dog round's): such a void is refused, for the whole round.
            if reverse:
                raise InvalidRequest(
                    f"round {rnd.code} credited {reverse} at the operator's wallet to"
                    f" {session.player_id}; the wallet protocol cannot reverse it: settle it"
                    " with the operator",
                    game_code=rnd.code,
                )
            refund = give_back(session, seat, seat.wallet_debits, "void")
            if session.open_round == rnd.code:
                session.round_closed(rnd.code, None)
        elif session.closed:
            # the session's balance already went back to the account: adjust there
            account = uow.account_by_id(session.account_id)
            if refund:
                account.refund_round(rnd.code, refund)
            if reverse:
                account.reverse_round_win(rnd.code, reverse)
        else:
            if refund:
                session.refund(rnd.code, refund)
            if reverse:
                session.reverse_win(rnd.code, reverse)
            if session.open_round == rnd.code:
                session.round_closed(rnd.code, None)
        seat.voided(
            reason=cmd.reason, incident_id=cmd.incident_id, refunded=refund, reversed_win=reverse
        )
        return refund, reverse
