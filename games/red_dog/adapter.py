"""Red Dog as the round lifecycle plays it: params, decisions and views of ``engine``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.adapter import Json, RoundTerms
from games.deal import Deal
from games.red_dog import engine as rd

GAME = "red-dog"
CODE_PREFIX = "RD"


@dataclass(frozen=True, slots=True)
class RedDogParams:
    """A round's bet and the table limits it was placed under."""

    bet: int
    min_bet: int
    max_bet: int

    @property
    def rules(self) -> rd.RedDogRules:
        return rd.RedDogRules(min_bet=self.min_bet, max_bet=self.max_bet)


class RedDogAdapter:
    game = GAME

    def __init__(self, rules: rd.RedDogRules = rd.DEFAULT_RULES) -> None:
        self.rules = rules

    def params(self, bet: int) -> RedDogParams:
        """A new round's params at this table."""
        return RedDogParams(bet=bet, min_bet=self.rules.min_bet, max_bet=self.rules.max_bet)

    def read_params(self, doc: Mapping[str, Json]) -> RedDogParams:
        return RedDogParams(bet=doc["bet"], min_bet=doc["min_bet"], max_bet=doc["max_bet"])

    def write_params(self, params: RedDogParams) -> dict[str, Json]:
        return {"bet": params.bet, "min_bet": params.min_bet, "max_bet": params.max_bet}

    def read_decision(self, wire: Sequence[Json]) -> rd.Decision:
        return rd.Decision.from_wire(wire)

    def write_decision(self, decision: rd.Decision) -> list[Json]:
        return list(decision.to_wire())

    def terms(self, params: RedDogParams) -> RoundTerms:
        return RoundTerms("classic", params.rules.rules_version, rd.PAYTABLE_ID, CODE_PREFIX)

    def stake_of(self, params: RedDogParams) -> int:
        rd.verify_deal(params.rules, params.bet)
        return int(params.bet)

    def start(self, params: RedDogParams, seed: Deal) -> rd.RedDogState:
        return rd.deal(params.rules, params.bet, seed)

    def apply(
        self, params: RedDogParams, state: rd.RedDogState, decision: rd.Decision, seed: Deal
    ) -> rd.RedDogState:
        return rd.apply(state, decision, seed)

    def replay(
        self, params: RedDogParams, decisions: Sequence[rd.Decision], seed: Deal
    ) -> rd.RedDogState:
        return rd.replay(params.rules, params.bet, decisions, seed)

    def default_decision(self, state: rd.RedDogState) -> rd.Decision:
        return rd.default_action(state)

    def staked(self, state: rd.RedDogState) -> int:
        return state.staked

    def settled(self, state: rd.RedDogState) -> bool:
        return state.settled

    def payout(self, state: rd.RedDogState) -> int:
        return state.payout

    def outcome(self, state: rd.RedDogState) -> str:
        return state.outcome.value if state.outcome else "open"

    def view(self, state: rd.RedDogState) -> dict[str, Any]:
        return {
            "cards": [str(c) for c in state.cards],
            "phase": state.phase.value,
            "spread": state.spread,
            "bet": state.bet,
            "raise": state.raise_amount,
            "max_raise": state.max_raise,
        }
