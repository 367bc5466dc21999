"""Jacks or Better as the round lifecycle plays it: params, steps and views of the engine.

A round's decisions are the engine's :class:`~games.video_poker.engine.Decision` plus the
hold step (:mod:`games.video_poker.hold`). The total stake (coin value x coins x lines) is
taken at the deal; double-up re-stakes the pending win, which is only paid when the
player collects (seed 000: the win joins the balance "al termine dei possibili raddoppi o
qualora il giocatore incassi la vincita").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from games.adapter import Json, RoundTerms
from games.deal import Deal
from games.errors import GameRuleError
from games.video_poker import double_up, engine
from games.video_poker.hold import Step, apply_step, replay_steps, step_from_wire
from games.video_poker.variants import VARIANTS, Variant, variant_for

GAME = "video-poker"
CODE_PREFIX = {"jb-4line": "JB4", "jb-multi": "JBM"}


class UnknownVariant(GameRuleError):
    """The deal names a variant this server does not offer."""

    code: ClassVar[str] = "unknown-variant"


@dataclass(frozen=True, slots=True)
class VideoPokerParams:
    """A deal's variant and bet, as the player chose them."""

    variant: str
    coin_value: int
    coins: int
    lines: int
    rules_version: str | None = None
    """The variant's rules version a recorded round was played under (None: current)."""

    @property
    def rules(self) -> Variant:
        v = variant_for(self.variant, self.rules_version) if isinstance(self.variant, str) else None
        if v is None:
            raise UnknownVariant(
                f"unknown variant {self.variant!r} (expected one of {sorted(VARIANTS)})"
            )
        return v


class VideoPokerAdapter:
    game = GAME

    def read_params(self, doc: Mapping[str, Json]) -> VideoPokerParams:
        return VideoPokerParams(
            variant=doc["variant"],
            coin_value=doc["coin_value"],
            coins=doc["coins"],
            lines=doc["lines"],
            # Rounds recorded before rules versions were written into params played the
            # first version of their variant.
            rules_version=str(doc.get("rules_version", "1")),
        )

    def write_params(self, params: VideoPokerParams) -> dict[str, Json]:
        return {
            "variant": params.variant,
            "coin_value": params.coin_value,
            "coins": params.coins,
            "lines": params.lines,
            "rules_version": params.rules.rules_version,
        }

    def read_decision(self, wire: Sequence[Json]) -> Step:
        return step_from_wire(wire)

    def write_decision(self, decision: Step) -> list[Json]:
        return list(decision.to_wire())

    def terms(self, params: VideoPokerParams) -> RoundTerms:
        v = params.rules
        return RoundTerms(v.id, v.rules_version, v.paytable_id, CODE_PREFIX.get(v.id, "JB"))

    def stake_of(self, params: VideoPokerParams) -> int:
        engine.verify_deal(params.rules, params.coin_value, params.coins, params.lines)
        return engine.stake(params.coin_value, params.coins, params.lines)

    def start(self, params: VideoPokerParams, seed: Deal) -> engine.VideoPokerState:
        return engine.deal(params.rules, params.coin_value, params.coins, params.lines, seed)

    def apply(
        self,
        params: VideoPokerParams,
        state: engine.VideoPokerState,
        decision: Step,
        seed: Deal,
    ) -> engine.VideoPokerState:
        return apply_step(state, decision, seed)

    def replay(
        self, params: VideoPokerParams, decisions: Sequence[Step], seed: Deal
    ) -> engine.VideoPokerState:
        p = params
        return replay_steps(p.rules, p.coin_value, p.coins, p.lines, decisions, seed)

    def default_decision(self, state: engine.VideoPokerState) -> Step:
        return double_up.default_action(state)

    def staked(self, state: engine.VideoPokerState) -> int:
        return state.stake

    def settled(self, state: engine.VideoPokerState) -> bool:
        return state.settled

    def payout(self, state: engine.VideoPokerState) -> int:
        return state.win

    def outcome(self, state: engine.VideoPokerState) -> str:
        return "win" if state.win > 0 else "lose"

    def view(self, state: engine.VideoPokerState) -> dict[str, Any]:
        return {
            "dealt": [str(c) for c in state.dealt],
            "cards": [str(c) for c in state.dealt],
            "recommended": list(state.recommended),
            "phase": state.phase.value,
            "holds": None if state.holds is None else list(state.holds),
            "coin_value": state.coin_value,
            "coins": state.coins,
            "lines": [
                {"cards": [str(c) for c in ln.cards], "rank": ln.rank.value, "win": ln.win}
                for ln in state.line_results
            ],
            "line_win": state.line_win,
            "win": state.win,
            "double_up": [
                {
                    "n": s.n,
                    "bet_type": s.kind.value,
                    "win_before": s.win_before,
                    "staked": s.staked,
                    "banked": s.banked,
                    "dealer_card": str(s.dealer_card),
                    "cards": [str(c) for c in s.cards],
                    "index": s.index,
                    "result": None if s.result is None else s.result.value,
                    "amount_after": s.amount_after,
                }
                for s in state.steps
            ],
        }
