"""Shared pieces of the live-table tests: a fake clock, chosen shoes, a table on a store."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from games.blackjack import Rules, SeatPlan, Shoe, shoe_from_seed
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables.runner import TableRunner
from tests.helpers import ChosenSeeds, open_session

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
CONFIG: dict[str, Any] = {
    "betting_ms": 10_000,
    "insurance_ms": 5_000,
    "step_ms": 5_000,
    "grace_ms": 0,
    "settle_batch": 3,
}


class FakeClock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, ms: int) -> datetime:
        self.now += timedelta(milliseconds=ms)
        return self.now


class ChosenShoes:
    """Fake shoe maker: seed ``bytes([i]) * 32`` deals ``shoes[i]``; other seeds the real
    shoe of that seed."""

    def __init__(self, *shoes: Shoe) -> None:
        self.shoes = shoes

    def __call__(self, rules: Rules, seed: bytes) -> Shoe:
        if seed == bytes([seed[0]]) * 32 and seed[0] < len(self.shoes):
            return self.shoes[seed[0]]
        return shoe_from_seed(rules, seed)


def seed_of(i: int) -> bytes:
    return bytes([i]) * 32


def a_seed_that_stops_at_a_step(config: dict[str, Any]) -> bytes:
    """A real seed whose first three cards (the shared hand and the dealer's up card) hold
    no ace and no ten: no blackjack settles the round at once, no insurance is offered, so
    the round waits at its first step with the hole card still in the shoe. (A random
    shoe sometimes deals a blackjack, and a test that expects a round in progress then
    finds it settled, or the next round already open.)"""
    from ledger.tables.config import check_config, rules_of

    rules = rules_of(check_config(config))
    for n in range(1_000):
        seed = hashlib.sha256(b"mid-round %d" % n).digest()
        if all(c.rank < 10 for c in shoe_from_seed(rules, seed)[:3]):  # 2..9: not A, T-K
            return seed
    raise AssertionError("no such seed among the first 1,000")


class Live:
    """One app with one table ("T1"), a fake clock and a runner."""

    def __init__(
        self,
        store: Any,
        *shoes: Shoe,
        config: dict[str, Any] | None = None,
        seeds: tuple[bytes, ...] = (),
    ) -> None:
        self.store = store
        self.seeds = seeds  # real seeds handed out after the chosen shoes' ones
        self.clock = FakeClock()
        self.shoes = ChosenShoes(*shoes)
        self.app = self.open()
        self.app.command("create-T1", tc.CreateTable("T1", "EUR", config or dict(CONFIG)))
        self.runner = TableRunner(self.app, "T1", self.clock)
        self.n = 0

    def open(self) -> Casino:
        app = bootstrap(
            self.store.settings(),
            keyring=self.store.keyring,
            clock=self.clock,
            seed_source=ChosenSeeds(
                *(seed_of(i) for i in range(len(self.shoes.shoes))), *self.seeds
            ),
            shoe_maker=self.shoes,
        )
        self.store.apps.append(app)
        return app

    def player(self, name: str, buy_in: int = 20_000) -> str:
        return open_session(self.app, name, buy_in)

    def rid(self) -> str:
        self.n += 1
        return f"r{self.n}"

    def bet(self, session: str, bet: str, amount: int) -> tc.SeatChanged:
        return self.app.command(self.rid(), tc.PlaceBet(session, "T1", bet, amount))

    def decide(self, session: str, step: int, decision: str) -> tc.SeatDecided:
        return self.app.command(self.rid(), tc.TableDecide(session, "T1", step, decision))

    def tick(self, ms: int = 0) -> list[str]:
        return self.runner.tick(self.clock.advance(ms))

    def verify(self) -> int:
        """Close the application and run ``audit-cli verify --pin --balances`` on its log:
        the exit code (0: the log and the books verify)."""
        from audit_cli.main import main as audit_cli

        genesis = self.app.key_history.genesis_fingerprint
        self.app.close()
        return audit_cli(
            ["verify", "--db", self.store.db, "--pin", genesis, "--balances", "--jobs", "1"]
        )


def plans_of(app: Casino, rnd: Any) -> list[SeatPlan]:
    """Every dealt seat's recorded inputs (bets, insurance, decisions, unfunded steps), as
    the pure engine's replay takes them; a decision the runner overrode is left out."""
    from uuid import UUID

    from ledger.tables.aggregates import TableSeat

    plans = []
    for sid in rnd.seats:
        seat = app.find(TableSeat, UUID(sid))
        assert seat is not None
        bets = seat.bets()
        decisions: dict[int, str] = {}
        unfunded: set[int] = set()
        insurance = None
        for step, (kind, requested, reason) in seat.decisions.items():
            k = int(step)
            if sid in {a[0] for a in rnd.automatic.get(step, [])}:
                continue
            asked = requested or kind
            if reason is not None:
                unfunded.add(k)
            if k == 0:
                insurance = asked == "insure"
            else:
                decisions[k] = asked
        sides = {b: a for b, a in bets.items() if b != "main"}
        plans.append(SeatPlan(sid, bets["main"], sides, insurance, decisions, frozenset(unfunded)))
    return plans
