"""What every table handler shares: loading the table, its round, seats and shoe.

The shoe's cards are derived from its unsealed seed when a window closes (by the runner)
and kept in memory for the process; no card beyond those shown is ever written or
returned. Seats are found through the log's notifications of seat openings after the
round's ``seats_from`` position (a player's command never writes the table round).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from games.blackjack import Rules, Shoe, shoe_from_seed
from ledger.errors import LedgerError
from ledger.keys import Keyring
from ledger.rounds import unseal_seed
from ledger.tables.errors import TableNotFound
from ledger.tables.seat import TableSeat
from ledger.tables.shoe import TableShoe
from ledger.tables.table import Table, rules_of, table_id_for
from ledger.tables.table_round import TableRound
from ledger.unit_of_work import UnitOfWork

Clock = Callable[[], datetime]
ShoeMaker = Callable[[Rules, bytes], Shoe]
SeatIndex = Callable[[int], list[UUID]]
"""Ids of seat aggregates opened after a notification id (their opening events)."""
LastPosition = Callable[[], int]
Result = dict[str, Any]


class NotDue(LedgerError):
    """The runner's action is not due yet (a window still open, a seat still deciding)."""

    code = "not-due"


class Stale(LedgerError):
    """The runner's action was for a state the table has already left (another runner,
    or an earlier attempt, did it)."""

    code = "stale"


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


class TableBase:
    def __init__(
        self,
        keyring: Keyring,
        clock: Clock,
        seed_source: Callable[[], bytes],
        seat_index: SeatIndex,
        last_position: LastPosition,
        shoe_maker: ShoeMaker = shoe_from_seed,
    ) -> None:
        self.keyring = keyring
        self.clock = clock
        self.seed_source = seed_source
        self.seat_index = seat_index
        self.last_position = last_position
        self.shoe_maker = shoe_maker
        self._shoes: dict[UUID, Shoe] = {}

    def table(self, uow: UnitOfWork, table: str) -> Table:
        found = uow.get(Table, table_id_for(table)) if isinstance(table, str) else None
        if found is None:
            raise TableNotFound(f"no blackjack table {table!r}", table=table)
        return found

    def current(self, uow: UnitOfWork, table: str) -> tuple[Table, TableRound | None]:
        t = self.table(uow, table)
        if t.round_id is None:
            return t, None
        return t, uow.get(TableRound, UUID(t.round_id))

    def shoe(self, uow: UnitOfWork, rnd: TableRound) -> Shoe:
        sid = UUID(rnd.shoe_id)
        cached = self._shoes.get(sid)
        if cached is not None:
            return cached
        record = uow.get(TableShoe, sid)
        assert record is not None, "a table round names an existing shoe"
        seed = unseal_seed(
            self.keyring.sealing_keys[record.sealing_kid], record.id, record.sealed_seed
        )
        shoe = self.shoe_maker(rules_of(rnd.config), seed)
        self._shoes[sid] = shoe
        return shoe

    def seed_of(self, record: TableShoe) -> bytes:
        return unseal_seed(
            self.keyring.sealing_keys[record.sealing_kid], record.id, record.sealed_seed
        )

    def seats_of(self, uow: UnitOfWork, rnd: TableRound) -> list[TableSeat]:
        """Every seat opened in this round (whatever its status), in opening order."""
        out: list[TableSeat] = []
        for sid in self.seat_index(rnd.seats_from):
            seat = uow.get(TableSeat, sid)
            if seat is not None and seat.round_id == str(rnd.id):
                out.append(seat)
        return out

    def dealt_seats(self, uow: UnitOfWork, rnd: TableRound) -> list[TableSeat]:
        """The seats dealt in, in the order recorded at the deal."""
        out = []
        for sid in rnd.seats:
            seat = uow.get(TableSeat, UUID(sid))
            assert seat is not None, "a dealt seat exists"
            out.append(seat)
        return out
