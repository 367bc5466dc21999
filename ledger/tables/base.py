"""What every table handler shares: loading the table, its round, seats and shoe.

The shoe's cards are derived from its unsealed seed when a window closes (by the runner)
and kept in memory for the process; no card beyond those shown is ever written or
returned. Seats are found through the log's notifications of seat openings after the
round's ``seats_from`` position (a player's command never writes the table round).

A command for one seat costs the same however many seats the round has: the seat is found
by its id (round, session), whether it was dealt in through a set, and the round's rules
and shared states (what every seat's replay goes through) are computed once per committed
round version and kept (:meth:`TableBase.states`), never per command or per seat.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from games.blackjack import Rules, Shoe, shoe_from_seed
from ledger.errors import LedgerError
from ledger.keys import Keyring
from ledger.rounds import unseal_seed
from ledger.tables.codes import round_by_code
from ledger.tables.errors import TableNotFound
from ledger.tables.replay import RoundStates
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
KEPT_ROUNDS = 8
"""Round versions whose rules and shared states a handler keeps (a few tables' rounds)."""
KEPT_SHOES = 8
"""Rebuilt shoes kept (the tables' current ones; any other is rebuilt from its sealed seed)."""


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
        chip_moves_per_round: int = 60,
    ) -> None:
        self.keyring = keyring
        self.chip_moves_per_round = chip_moves_per_round
        """Chips a seat may place or take back in one round (``chip-limit-reached``)."""
        self.clock = clock
        self.seed_source = seed_source
        self.seat_index = seat_index
        self.last_position = last_position
        self.shoe_maker = shoe_maker
        self._shoes: dict[UUID, Shoe] = {}
        self._rules: dict[UUID, Rules] = {}
        self._states: dict[tuple[UUID, int], RoundStates] = {}
        self._done: dict[tuple[UUID, int], set[str]] = {}
        """Per committed round version: the dealt seats with no choice left in its open
        window (the runner's early close, :meth:`Runner._deciding`)."""

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

    def round_by_code(self, uow: UnitOfWork, table: str, code: str) -> TableRound | None:
        found: TableRound | None = round_by_code(uow.get, table, code)
        return found

    def rules(self, rnd: TableRound) -> Rules:
        """The engine's rules of the round (its configuration is fixed when it opens)."""
        rules = self._rules.get(rnd.id)
        if rules is None:
            if len(self._rules) >= KEPT_ROUNDS:
                self._rules.clear()
            rules = self._rules[rnd.id] = rules_of(rnd.config)
        return rules

    def states(self, rnd: TableRound) -> RoundStates:
        """The round's shared states for replaying its seats. Kept per (round, version)
        only for a committed version (no pending event): a version this handler changed
        in a batch that may not commit is computed afresh, never kept."""
        if getattr(rnd, "_pending_events", None):
            return RoundStates(rnd, self.rules(rnd))
        key = (rnd.id, rnd.version)
        states = self._states.get(key)
        if states is None:
            if len(self._states) >= KEPT_ROUNDS:
                self._states.clear()
            states = self._states[key] = RoundStates(rnd, self.rules(rnd))
        return states

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
        if len(self._shoes) >= KEPT_SHOES:  # a long-running server deals shoe after shoe
            self._shoes.clear()
        self._shoes[sid] = shoe
        return shoe

    def seed_of(self, record: TableShoe) -> bytes:
        return unseal_seed(
            self.keyring.sealing_keys[record.sealing_kid], record.id, record.sealed_seed
        )

    def seats_of(
        self, uow: UnitOfWork, rnd: TableRound, skip: frozenset[str] = frozenset()
    ) -> list[TableSeat]:
        """Every seat opened in this round (whatever its status), in opening order; the
        seats whose ids are in ``skip`` are not even loaded."""
        out: list[TableSeat] = []
        for sid in self.seat_index(rnd.seats_from):
            if skip and str(sid) in skip:
                continue
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
