"""The live table's handlers on an in-memory store: no application, database, signing,
HTTP or thread; a command is a handler call on a :class:`~ledger.unit_of_work.UnitOfWork`.

:class:`MemoryStore` keeps the aggregates and an ordered log of their events, and saves a
command's unit of work as the application does: only when its handler returned (a handler
that raised saves nothing). :class:`Desk` is one table ``T1`` on it, with a fake clock and
chosen cards, and one method per command; :meth:`Desk.refused` runs a command that must
fail with a typed error and checks that it changed nothing: not the store, and not even
the stored aggregates the handler loaded (a refusal that changed one in memory would send
a whole group-commit batch down the careful path, ``ledger.group_commit``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic

from games.blackjack import Rules, Shoe
from games.errors import GameRuleError
from ledger import contracts
from ledger.accounts import GameSession
from ledger.errors import LedgerError
from ledger.group_commit import fresh_copy
from ledger.keys import Keyring
from ledger.tables import commands as tc
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableSeat,
    seat_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.context import TableCache, TablePorts
from ledger.tables.operator import Operator
from ledger.tables.players import Players
from ledger.tables.runner import RunnerSteps
from ledger.unit_of_work import UnitOfWork

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
CONFIG: dict[str, Any] = {
    "betting_ms": 10_000,
    "insurance_ms": 5_000,
    "step_ms": 5_000,
    "grace_ms": 0,
    "settle_batch": 2,
}
KEYRING = Keyring.generate()  # seals the shoe's seed; one for the module is enough


@dataclass
class MemoryStore:
    """Aggregates by id and every saved event in order (position = index + 1)."""

    aggregates: dict[UUID, Aggregate] = field(default_factory=dict)
    log: list[tuple[str, UUID, Any]] = field(default_factory=list)
    """(topic, aggregate id, event) of each saved event."""

    def find(self, cls: type[Any], aggregate_id: UUID) -> Any:
        """A fresh copy, as the application's repository gives each command its own."""
        found = self.aggregates.get(aggregate_id)
        return fresh_copy(found) if isinstance(found, cls) else None

    def save(self, uow: UnitOfWork) -> None:
        for agg in uow.touched():
            events = agg.collect_events()
            if events:
                self.aggregates[agg.id] = fresh_copy(agg)
                self.log.extend((get_topic(type(e)), agg.id, e) for e in events)

    def seat_index(self, after: int) -> list[UUID]:
        """The seats opened after a log position (``TablePorts.seat_index``)."""
        return [oid for topic, oid, _ in self.log[after:] if topic == contracts.SEAT_OPENED]

    def position(self) -> int:
        return len(self.log)

    def state(self) -> tuple[int, dict[UUID, int]]:
        """What a refused command must leave as it was: the log and every version."""
        return len(self.log), {k: a.version for k, a in self.aggregates.items()}


class Desk:
    """Table ``T1`` with :data:`CONFIG` on a :class:`MemoryStore`; the clock starts at
    :data:`T0`; ``cards``: the shoe dealt (text like ``"Ts 9h 7d Kc ..."``), else a real
    shoe of a fixed seed."""

    def __init__(self, cards: str | None = None, config: dict[str, Any] | None = None) -> None:
        self.store = MemoryStore()
        self.now = T0
        self.cards = cards
        ports = TablePorts(
            KEYRING,
            lambda: self.now,
            lambda: b"\x07" * 32,
            self.store.seat_index,
            self.store.position,
            shoe_maker=self._shoe,
        )
        cache = TableCache()
        self.players = Players(ports, cache)
        self.runner = RunnerSteps(ports, cache)
        self.operator = Operator(ports, cache)
        routes = [*self.players.routes(), *self.runner.routes(), *self.operator.routes()]
        self.handlers = {route.command: route.handler for route in routes}
        """Each command type's handler, as :func:`ledger.bootstrap.bootstrap` registers them."""
        self.n = 0
        self.run(self.handle, tc.CreateTable("T1", "EUR", dict(config or CONFIG)))

    def _shoe(self, rules: Rules, seed: bytes) -> Shoe:
        from games.blackjack import shoe_from_seed

        if self.cards is None:
            return shoe_from_seed(rules, seed)
        return Shoe.of(self.cards)

    # -- running commands ----------------------------------------------------------------

    def handle(self, uow: UnitOfWork, cmd: Any) -> Any:
        """Any command, by its registered handler."""
        return self.handlers[type(cmd)](uow, cmd)

    def run(self, handler: Callable[[UnitOfWork, Any], Any], cmd: Any) -> Any:
        uow = UnitOfWork(self.store.find, {})
        result = handler(uow, cmd)
        self.store.save(uow)
        return result

    def refused(
        self,
        error: type[Exception] | tuple[type[Exception], ...],
        handler: Callable[[UnitOfWork, Any], Any],
        cmd: Any,
    ) -> Any:
        """Run a command that must be refused with a typed error, changing nothing."""
        before = self.store.state()
        uow = UnitOfWork(self.store.find, {})
        with pytest.raises(error) as caught:
            handler(uow, cmd)
        err = caught.value
        assert isinstance(err, LedgerError | GameRuleError), f"untyped {err!r}"
        assert isinstance(err.code, str) and err.code not in ("", "ledger-error", "game-rule")
        # What a group-commit batch checks (``BatchView.changed_by``): an aggregate that
        # existed changed by a refused command; one it created is dropped with it.
        stored = self.store.aggregates
        changed = [type(a).__name__ for a in uow.touched() if a.id in stored and a.collect_events()]
        assert not changed, f"{err.code} changed {changed} before refusing"
        assert self.store.state() == before
        return err

    def later(self, ms: int) -> datetime:
        self.now += timedelta(milliseconds=ms)
        return self.now

    # -- players -------------------------------------------------------------------------

    def player(self, name: str = "ann", buy_in: int = 20_000) -> str:
        """A funded transfer session (stored as opened; the account is not needed here)."""
        session = GameSession(account_id=uuid4(), player_id=name, currency="EUR", buy_in=buy_in)
        self.store.aggregates[session.id] = session
        session.collect_events()
        return str(session.id)

    def session(self, sid: str) -> GameSession:
        found = self.store.find(GameSession, UUID(sid))
        assert isinstance(found, GameSession)
        return found

    def balance(self, sid: str) -> int:
        return self.session(sid).balance

    def bet(self, sid: str, bet: str = "main", amount: int = 1_000) -> Any:
        return self.run(self.handle, tc.PlaceBet(sid, "T1", bet, amount))

    def decide(self, sid: str, step: int, decision: str) -> Any:
        return self.run(self.handle, tc.TableDecide(sid, "T1", step, decision))

    def options(self, sid: str) -> list[str]:
        uow = UnitOfWork(self.store.find, {})
        return [o[0] for o in self.players.offered(uow, "T1", sid)]

    # -- the runner ----------------------------------------------------------------------

    def step(
        self, action: str, step: int = 0, early: bool = False, number: int | None = None
    ) -> tc.RunnerCommand[Any]:
        """The runner's command named by its wire ``action`` (as the runner's request
        ids name it), for round ``number`` (default: the current one, or the next to open)."""
        n = self.table().rounds + (action == "open") if number is None else number
        at = self.now.isoformat(timespec="milliseconds")
        simple: dict[str, type[tc.RunnerCommand[Any]]] = {
            "open": tc.OpenRound,
            "start": tc.StartBetting,
            "deal": tc.DealRound,
            "dealer": tc.PlayDealer,
            "settle": tc.FinishRound,
        }
        if action == "insurance":
            return tc.CloseInsurance("T1", n, at, early)
        if action == "step":
            return tc.CloseStep("T1", n, at, step, early)
        if action == "settle-batch":
            return tc.SettleBatch("T1", n, at, step)
        return simple[action]("T1", n, at)

    def advance(self, action: str, step: int = 0, early: bool = False) -> Any:
        return self.run(self.handle, self.step(action, step, early))

    def open(self) -> Any:
        return self.advance("open")

    # -- reading -------------------------------------------------------------------------

    def table(self) -> Table:
        found = self.store.find(Table, table_id_for("T1"))
        assert isinstance(found, Table)
        return found

    def round(self, number: int | None = None) -> TableRound:
        n = self.table().rounds if number is None else number
        found = self.store.find(TableRound, table_round_id_for("T1", n))
        assert isinstance(found, TableRound), f"no round {n}"
        return found

    def seat(self, sid: str, number: int | None = None) -> TableSeat:
        found = self.store.find(TableSeat, seat_id_for(self.round(number).id, sid))
        assert isinstance(found, TableSeat)
        return found

    def topics(self, since: int = 0) -> list[str]:
        """The saved events' topics from a log position, short (``bet-placed@1``)."""
        return [t.rsplit("/", 1)[-1] for t, _, _ in self.store.log[since:]]

    def events(self, aggregate_id: UUID) -> list[Any]:
        return [e for _, oid, e in self.store.log if oid == aggregate_id]
