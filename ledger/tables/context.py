"""What the live table's handlers and views share: loading a table's aggregates, the
shoe and round caches, and a round's engine state rebuilt from its log.

**Loading.** A command for one seat costs the same however many seats the round has: the
seat is found by its id (round, session), whether it was dealt in through a set, and the
round's rules and shared states (what every seat's replay goes through) are computed once
per committed round version and kept (:class:`TableCache`), never per command or per seat.
Seats are found through the log's notifications of seat openings after the round's
``seats_from`` position (a player's command never writes the table round).

**The shoe.** Its cards are derived from its unsealed seed when a window closes (by the
runner) and kept in memory for the process (:class:`TableCache`, one per application,
shared by the player's, the runner's and the operator's handlers); no card beyond those
shown is ever written or returned.

**Replay.** The engine replays (:mod:`games.blackjack.replay`): its shared states come
from the cards the table round's events have shown (:func:`shown_of`), and each seat's
state from its own bets and decisions (:func:`plan_of`) through the same steps as a whole
round's replay (:func:`seat_of`, the engine's ``replay_seat``): one seat at a time, so a
command costs the same however many seats the round has. So a restarted runner, a
player's command and the auditor all see the same seats without any undealt card: only
the runner, when it closes a window, reads the next card from the shoe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from games.blackjack import (
    Phase,
    Rules,
    Seat,
    SeatPlan,
    SharedRound,
    Shoe,
    ShownRound,
    replay_seat,
    shoe_from_seed,
)
from games.blackjack.replay import Observer
from games.blackjack.shared import CashoutOffers
from ledger import contracts
from ledger.keys import Keyring
from ledger.rounds import unseal_seed
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableSeat,
    TableShoe,
    round_by_code,
    table_id_for,
)
from ledger.tables.errors import TableNotFound
from ledger.unit_of_work import UnitOfWork

Clock = Callable[[], datetime]
ShoeMaker = Callable[[Rules, bytes], Shoe]
SeatIndex = Callable[[int], list[UUID]]
"""Ids of seat aggregates opened after a notification id (their opening events)."""
LastPosition = Callable[[], int]
KEPT_ROUNDS = 8
"""Round versions whose rules and shared states are kept (a few tables' rounds)."""
KEPT_SHOES = 8
"""Rebuilt shoes kept (the tables' current ones; any other is rebuilt from its sealed seed)."""


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


# -- the log's seat openings ----------------------------------------------------------------


def seat_openings(app: Any, after: int) -> Iterator[Notification]:
    """The notifications of seat openings after a notification id, in log order."""
    start = after + 1
    while True:
        page = app.recorder.select_notifications(
            start=start, limit=1000, topics=[contracts.SEAT_OPENED]
        )
        yield from page
        if len(page) < 1000:
            return
        start = page[-1].id + 1


def seat_index(app: Any) -> Callable[[int], list[UUID]]:
    """Seat aggregates opened after a notification id, read from the application's log
    (the opening events' topic), in notification order."""

    def index(after: int) -> list[UUID]:
        out: list[UUID] = []
        # the ids alone (ledger.store's recorders), not each opening's whole row
        out.extend(app.recorder.select_originators(contracts.SEAT_OPENED, after))
        return out

    return index


def last_position(app: Any) -> Callable[[], int]:
    def position() -> int:
        return int(app.recorder.max_notification_id() or 0)

    return position


# -- replay: a live round's engine state from its log -------------------------------------


def closed_steps(rnd: TableRound) -> list[int]:
    """The decision steps closed so far (the runner records each close's automatic
    actions, none or some, under the step; "0" is the insurance window)."""
    return sorted(int(k) for k in rnd.automatic if k != "0")


def shown_of(rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None) -> ShownRound:
    """The engine's shared states of the round, from the cards its events have shown."""
    return ShownRound.of(
        rules,
        rnd.start,
        player_cards=rnd.player_cards,
        up=rnd.up,
        hole=rnd.hole,
        step_cards=rnd.step_cards,
        dealer_draws=rnd.dealer_draws,
        insurance_closed="0" in rnd.automatic,
        closed_steps=closed_steps(rnd),
        open_step=rnd.step if rnd.phase is Phase.STEP else None,
        cashout=cashout,
    )


def shared_of(rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None) -> SharedRound:
    """The engine's shared round as the table round's events have left it."""
    return shown_of(rnd, rules, cashout).now


def plan_of(rnd: TableRound, record: TableSeat) -> SeatPlan:
    """The seat's recorded inputs as the engine's replay takes them: its bets, its
    insurance answer and decisions as asked for (the engine applies seed 002's replacement
    again where the balance did not cover a double, split or insurance: ``unfunded``), and
    none for a step whose close gave it the runner's automatic action."""
    sid = str(record.id)
    bets = record.bets()
    insurance: bool | None = None
    decisions: dict[int, str] = {}
    unfunded: set[int] = set()
    for step, (kind, requested, reason) in record.decisions.items():
        if sid in rnd.automatic_seats.get(step, frozenset()):
            continue
        k, asked = int(step), str(requested if requested is not None else kind)
        if reason is not None:
            unfunded.add(k)
        if k == 0:
            insurance = asked == "insure"
        else:
            decisions[k] = asked
    sides = {bet: amount for bet, amount in bets.items() if bet != "main"}
    return SeatPlan(sid, bets.get("main", 0), sides, insurance, decisions, frozenset(unfunded))


class RoundStates:
    """The shared states every seat of one round version replays through (the engine's
    :class:`~games.blackjack.ShownRound`). They depend on the table round alone, so a
    handler computes them once for all the seats it replays
    (:meth:`TableHandlers.states` keeps them per committed round version)."""

    def __init__(self, rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None):
        self.rules = rules
        self.shown = shown_of(rnd, rules, cashout)
        self.shared = self.shown.now
        """The shared round as the table round's events have left it."""


def seat_of(
    rnd: TableRound,
    rules: Rules,
    record: TableSeat,
    cashout: CashoutOffers | None = None,
    observe: Observer | None = None,
    states: RoundStates | None = None,
) -> Seat:
    """One seat's engine state now, replayed by the engine
    (:func:`games.blackjack.replay_seat`) from the round's shown cards and the seat's own
    record (``states``: the round's shared states, if the caller has them already)."""
    st = states if states is not None else RoundStates(rnd, rules, cashout)
    return replay_seat(st.shown, plan_of(rnd, record), observe)


# -- the handlers' shared ports and caches ------------------------------------------------


@dataclass(frozen=True)
class TablePorts:
    """What the table handlers are given (:func:`ledger.bootstrap.bootstrap`)."""

    keyring: Keyring
    clock: Clock
    seed_source: Callable[[], bytes]
    seat_index: SeatIndex
    last_position: LastPosition
    shoe_maker: ShoeMaker = shoe_from_seed
    chip_moves_per_round: int = 60
    """Chips a seat may place or take back in one round (``chip-limit-reached``)."""
    peek: Callable[[UUID], Any] | None = None
    """The aggregate as this process last committed or read it, not copied (read only),
    or None (:meth:`ledger.casino.Casino.cached`): the runner's read of settled seats."""


@dataclass
class TableCache:
    """One application's kept shoes and round states, shared by its player's, runner's
    and operator's handlers (never a module global)."""

    shoes: dict[UUID, Shoe] = field(default_factory=dict)
    rules: dict[UUID, Rules] = field(default_factory=dict)
    states: dict[tuple[UUID, int], RoundStates] = field(default_factory=dict)
    done: dict[tuple[UUID, int], set[str]] = field(default_factory=dict)
    """Per committed round version: the dealt seats with no choice left in its open
    window (the runner's early close, :meth:`ledger.tables.runner.RunnerSteps._deciding`)."""


class TableHandlers:
    """Base of the player's, the runner's and the operator's handlers: the ports, the
    shared cache, and loading a table's aggregates."""

    def __init__(self, ports: TablePorts, cache: TableCache) -> None:
        self.ports = ports
        self.cache = cache
        self.clock = ports.clock
        self.keyring = ports.keyring

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
        rules = self.cache.rules.get(rnd.id)
        if rules is None:
            if len(self.cache.rules) >= KEPT_ROUNDS:
                self.cache.rules.clear()
            rules = self.cache.rules[rnd.id] = rnd.settings.rules()
        return rules

    def states(self, rnd: TableRound) -> RoundStates:
        """The round's shared states for replaying its seats. Kept per (round, version)
        only for a committed version (no pending event): a version this handler changed
        in a batch that may not commit is computed afresh, never kept."""
        if getattr(rnd, "_pending_events", None):
            return RoundStates(rnd, self.rules(rnd))
        key = (rnd.id, rnd.version)
        states = self.cache.states.get(key)
        if states is None:
            if len(self.cache.states) >= KEPT_ROUNDS:
                self.cache.states.clear()
            states = self.cache.states[key] = RoundStates(rnd, self.rules(rnd))
        return states

    def shoe(self, uow: UnitOfWork, rnd: TableRound) -> Shoe:
        sid = UUID(rnd.shoe_id)
        cached = self.cache.shoes.get(sid)
        if cached is not None:
            return cached
        record = uow.get(TableShoe, sid)
        assert record is not None, "a table round names an existing shoe"
        shoe = self.ports.shoe_maker(self.rules(rnd), self.seed_of(record))
        if len(self.cache.shoes) >= KEPT_SHOES:  # a long-running server deals shoe after shoe
            self.cache.shoes.clear()
        self.cache.shoes[sid] = shoe
        return shoe

    def seed_of(self, record: TableShoe) -> bytes:
        return unseal_seed(
            self.keyring.sealing_keys[record.sealing_kid], record.id, record.sealed_seed
        )

    def seats_of(
        self,
        uow: UnitOfWork,
        rnd: TableRound,
        skip: frozenset[str] = frozenset(),
        read: bool = False,
    ) -> list[TableSeat]:
        """Every seat opened in this round (whatever its status), in opening order; the
        seats whose ids are in ``skip`` are not even loaded. ``read``: for reading only
        (:meth:`UnitOfWork.read`: not copied; change none of them)."""
        load = uow.read if read else uow.get
        out: list[TableSeat] = []
        for sid in self.ports.seat_index(rnd.seats_from):
            if skip and str(sid) in skip:
                continue
            seat = load(TableSeat, sid)
            if seat is not None and seat.round_id == str(rnd.id):
                out.append(seat)
        return out

    def dealt_seats(self, uow: UnitOfWork, rnd: TableRound, read: bool = False) -> list[TableSeat]:
        """The seats dealt in, in the order recorded at the deal (``read``: as
        :meth:`seats_of`)."""
        load = uow.read if read else uow.get
        out = []
        for sid in rnd.seats:
            seat = load(TableSeat, UUID(sid))
            assert seat is not None, "a dealt seat exists"
            out.append(seat)
        return out
