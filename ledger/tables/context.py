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

**Replay.** The shared state comes from the table round's events (the cards shown, the
phase), each seat's from its own bets and decisions replayed through the pure engine
(:func:`seat_of`). So a restarted runner, a player's command and the auditor all see the
same seats without any undealt card: only the runner, when it closes a window, reads the
next card from the shoe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from games.blackjack import (
    Phase,
    Rules,
    Seat,
    SharedRound,
    Shoe,
    close_insurance_seat,
    close_seat,
    deal_seat,
    decide,
    give_card,
    open_round,
    place_bets,
    shoe_from_seed,
)
from games.blackjack.shared import CashoutOffers
from games.cards import Card, Rank
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
        out.extend(n.originator_id for n in seat_openings(app, after))  # type: ignore[misc]
        return out

    return index


def last_position(app: Any) -> Callable[[], int]:
    def position() -> int:
        return int(app.recorder.max_notification_id() or 0)

    return position


# -- replay: a live round's engine state from its log -------------------------------------


def card(text: str) -> Card:
    return Card.parse(text)


def closed_steps(rnd: TableRound) -> list[int]:
    return sorted(int(k) for k in rnd.automatic if k != "0")


def automatic_at(rnd: TableRound, step: int) -> frozenset[str]:
    return rnd.automatic_seats.get(str(step), frozenset())


def _dealt(rnd: TableRound, base: SharedRound) -> SharedRound:
    up = card(rnd.up or "")
    ace_up = up.rank is Rank.ACE
    return replace(
        base,
        phase=Phase.INSURANCE if ace_up else Phase.STEP,
        player_cards=tuple(card(c) for c in rnd.player_cards),
        up=up,
        step=0 if ace_up else 1,
    )


def _step_state(after_deal: SharedRound, rnd: TableRound, k: int) -> SharedRound:
    return replace(
        after_deal,
        phase=Phase.STEP,
        step=k,
        step_cards=tuple(card(c) for c in rnd.step_cards[: k - 1]),
        peeked=after_deal.phase is Phase.INSURANCE,
    )


def shared_of(rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None) -> SharedRound:
    """The engine's shared round as the table round's events have left it."""
    base = open_round(rules, rnd.start, cashout)
    if rnd.up is None:
        return base
    dealt = _dealt(rnd, base)
    if rnd.phase == Phase.INSURANCE.value:
        return dealt
    if rnd.peeked and rnd.hole is not None and not rnd.dealer_draws and rnd.phase != "step":
        hole = card(rnd.hole)
        if dealt.up is not None and dealt.up.rank is Rank.ACE and _is_bj(dealt.up, hole):
            return replace(dealt, phase=Phase.SETTLED, hole=hole, peeked=True)
    shown = tuple(card(c) for c in rnd.step_cards)
    if rnd.phase == "step":
        return replace(_step_state(dealt, rnd, rnd.step), step_cards=shown)
    at_dealer = replace(
        dealt, phase=Phase.DEALER, step_cards=shown, peeked=dealt.phase is Phase.INSURANCE
    )
    if rnd.hole is None:
        return at_dealer
    return replace(
        at_dealer,
        phase=Phase.SETTLED,
        hole=card(rnd.hole),
        dealer_draws=tuple(card(c) for c in rnd.dealer_draws),
    )


def _is_bj(up: Card, hole: Card) -> bool:
    values = {up.rank, hole.rank}
    tens = {Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING}
    return Rank.ACE in values and bool(values & tens)


Observer = Callable[[SharedRound, Seat, str], None]
"""Called with the state a player decided in and what they asked for (statistics)."""


def _decide(
    shared: SharedRound, seat: Seat, recorded: list[object] | None, observe: Observer | None
) -> Seat:
    if recorded is None:
        return seat
    kind, requested, reason = recorded
    asked = str(requested if requested is not None else kind)
    if observe is not None:
        observe(shared, seat, asked)
    return decide(shared, seat, asked, funded=reason is None)


class RoundStates:
    """The shared states every seat of one round version replays through: the open round,
    the deal, each closed step and now. They depend on the table round alone, so a
    handler computes them once for all the seats it replays (:meth:`TableBase.states`
    keeps them per committed round version) instead of once per seat."""

    def __init__(self, rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None):
        self.rules = rules
        self.base = open_round(rules, rnd.start, cashout)
        self.dealt = None if rnd.up is None else _dealt(rnd, self.base)
        self.steps: list[tuple[str, SharedRound, frozenset[str], Card | None]] = []
        if self.dealt is not None:
            for k in closed_steps(rnd):
                shown = card(rnd.step_cards[k - 1]) if k - 1 < len(rnd.step_cards) else None
                self.steps.append(
                    (str(k), _step_state(self.dealt, rnd, k), automatic_at(rnd, k), shown)
                )
        self.insurance_closed = "0" in rnd.automatic
        self.insured_automatically = automatic_at(rnd, 0)
        self.open_step = str(rnd.step) if rnd.phase == "step" else None
        self.shared = shared_of(rnd, rules, cashout)
        """The shared round as the table round's events have left it (:func:`shared_of`)."""


def seat_of(
    rnd: TableRound,
    rules: Rules,
    record: TableSeat,
    cashout: CashoutOffers | None = None,
    observe: Observer | None = None,
    states: RoundStates | None = None,
) -> Seat:
    """One seat's engine state now: its bets, the deal, its decisions step by step
    (``states``: the round's shared states, if the caller has them already)."""
    st = states if states is not None else RoundStates(rnd, rules, cashout)
    bets = record.bets()
    sides = {k: v for k, v in bets.items() if k != "main"}
    sid = str(record.id)
    seat = place_bets(st.base, sid, bets.get("main", 0), sides)
    dealt = st.dealt
    if dealt is None:
        return seat
    seat = deal_seat(dealt, seat)
    decisions = record.decisions
    if dealt.phase is Phase.INSURANCE:
        if sid not in st.insured_automatically:
            seat = _decide(dealt, seat, decisions.get("0"), observe)
        if not st.insurance_closed:
            return seat
        seat = close_insurance_seat(seat, st.rules.insurance_stake(seat.main) > 0)
    for k, shared_k, automatic, step_card in st.steps:
        if sid not in automatic:
            seat = _decide(shared_k, seat, decisions.get(k), observe)
        seat = close_seat(shared_k, seat)
        seat = give_card(seat, step_card)
    if st.open_step is not None:
        seat = _decide(st.shared, seat, decisions.get(st.open_step), observe)
    return seat


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
        self, uow: UnitOfWork, rnd: TableRound, skip: frozenset[str] = frozenset()
    ) -> list[TableSeat]:
        """Every seat opened in this round (whatever its status), in opening order; the
        seats whose ids are in ``skip`` are not even loaded."""
        out: list[TableSeat] = []
        for sid in self.ports.seat_index(rnd.seats_from):
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
