"""A toy game registered by the test suite only: high card against the dealer.

It is the whole of a game as the registry sees it (engine, typed adapter, HTTP view
schema, catalogue entry, RTP rules) in one module, to prove that adding a game touches its
own package plus one registry entry and nothing in ``ledger/``, ``api/`` or ``audit_cli``.

Rules: the player bets; the player's card is shown; ``reveal`` shows the dealer's card.
Higher wins even money (paid 2 x bet), equal pushes (the bet back), lower loses. Over a
52-card deck a tie has probability 3/51 = 1/17, a win 8/17: the RTP is exactly 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from pydantic import BaseModel

from games.adapter import RoundTerms
from games.audit import OPTIMAL, GroupKey, RoundPlay
from games.cards import Card, full_deck
from games.deal import Deal, shuffled
from games.errors import ActionOutOfPhase, InvalidDecision
from games.registry import GameEntry
from games.rtp import PER_STAKED, Measure, Reference

GAME = "high-card"
PAYTABLE_ID = "high-card/1-1"
MIN_BET, MAX_BET = 100, 10_000


@dataclass(frozen=True, slots=True)
class HighCardParams:
    bet: int


@dataclass(frozen=True, slots=True)
class Reveal:
    def to_wire(self) -> list[Any]:
        return ["reveal"]


@dataclass(frozen=True, slots=True)
class HighCardState:
    bet: int
    player: Card
    dealer: Card | None = None

    @property
    def settled(self) -> bool:
        return self.dealer is not None

    @property
    def payout(self) -> int:
        if self.dealer is None or self.player.rank < self.dealer.rank:
            return 0
        return self.bet if self.player.rank == self.dealer.rank else 2 * self.bet


def deck(seed: Deal) -> list[Card]:
    return shuffled(seed, "high-card/deck", full_deck())


class HighCardAdapter:
    game = GAME

    def read_params(self, doc: Mapping[str, Any]) -> HighCardParams:
        return HighCardParams(doc["bet"])

    def write_params(self, params: HighCardParams) -> dict[str, Any]:
        return {"bet": params.bet}

    def read_decision(self, wire: Sequence[Any]) -> Reveal:
        if list(wire) != ["reveal"]:
            raise InvalidDecision(f"high card has one decision, ['reveal'], got {wire!r}")
        return Reveal()

    def write_decision(self, decision: Reveal) -> list[Any]:
        return decision.to_wire()

    def terms(self, params: HighCardParams) -> RoundTerms:
        return RoundTerms("classic", "high-card/1", PAYTABLE_ID, "HC")

    def stake_of(self, params: HighCardParams) -> int:
        bet = params.bet
        if type(bet) is not int or not MIN_BET <= bet <= MAX_BET:
            raise InvalidDecision(f"a high card bet is {MIN_BET}..{MAX_BET}, got {bet!r}")
        return bet

    def start(self, params: HighCardParams, seed: Deal) -> HighCardState:
        return HighCardState(params.bet, deck(seed)[0])

    def apply(
        self, params: HighCardParams, state: HighCardState, decision: Reveal, seed: Deal
    ) -> HighCardState:
        if state.settled:
            raise ActionOutOfPhase("reveal", "settled", "dealt")
        return replace(state, dealer=deck(seed)[1])

    def replay(
        self, params: HighCardParams, decisions: Sequence[Reveal], seed: Deal
    ) -> HighCardState:
        state = self.start(params, seed)
        for d in decisions:
            state = self.apply(params, state, d, seed)
        return state

    def default_decision(self, state: HighCardState) -> Reveal:
        return Reveal()

    def staked(self, state: HighCardState) -> int:
        return state.bet

    def settled(self, state: HighCardState) -> bool:
        return state.settled

    def payout(self, state: HighCardState) -> int:
        return state.payout

    def outcome(self, state: HighCardState) -> str:
        if not state.settled:
            return "open"
        return "lose" if state.payout == 0 else ("push" if state.payout == state.bet else "win")

    def view(self, state: HighCardState) -> dict[str, Any]:
        return {
            "player": str(state.player),
            "dealer": None if state.dealer is None else str(state.dealer),
            "bet": state.bet,
        }


class HighCardView(BaseModel):
    """The HTTP view of a high card round."""

    player: str
    dealer: str | None
    bet: int


class HighCardRtp:
    alternative = "none"
    measures: tuple[Measure, ...] = (PER_STAKED,)

    def coins(self, start: Mapping[str, Any]) -> int | None:
        return None

    def read(
        self, start: Mapping[str, Any], settled: Mapping[str, Any], decisions: Sequence[Any]
    ) -> RoundPlay:
        paid = int(settled["payout"])
        bet = int(start["params"]["bet"])
        return RoundPlay(bet, 1, [(str(settled["outcome"]), paid)], True, True)

    def references(self, key: GroupKey, play: str) -> dict[Measure, Reference] | None:
        if key[2] != PAYTABLE_ID or play != OPTIMAL:
            return None
        # Return per bet: 2 w.p. 8/17, 1 w.p. 1/17, 0 w.p. 8/17: mean 1, variance 16/17.
        variance = Fraction(16, 17)
        return {PER_STAKED: Reference(Fraction(1), variance, variance)}

    def unknown(self, key: GroupKey) -> str | None:
        return None if key[2] == PAYTABLE_ID else f"high-card: unknown paytable {key[2]!r}"


def catalogue_entry() -> dict[str, Any]:
    return {"id": "classic", "paytable_id": PAYTABLE_ID, "min_bet": MIN_BET, "rtp": "1"}


ENTRY = GameEntry(
    HighCardAdapter(),
    rtp=HighCardRtp(),
    view_schema=HighCardView,
    catalogue=catalogue_entry,
)
