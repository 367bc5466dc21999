"""Jacks or Better on the ledger: adapter over ``games.video_poker`` and player commands.

The total stake (coin value x coins x lines) is debited at the deal. Double-up re-stakes
the pending win, which is never credited before the player collects, so only the final
collected amount reaches the session (seed 000: the win joins the balance "al termine
dei possibili raddoppi o qualora il giocatore incassi la vincita").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from games.errors import GameRuleError, InvalidDecision
from games.video_poker import double_up, engine
from games.video_poker.variants import VARIANTS, Variant
from ledger.play import Result

if TYPE_CHECKING:
    from ledger.casino import Casino

GAME = "video-poker"
HOLD = "hold"
CODE_PREFIX = {"jb-4line": "JB4", "jb-multi": "JBM"}


class UnknownVariant(GameRuleError):
    """The deal names a variant this server does not offer."""

    code: ClassVar[str] = "unknown-variant"


def _variant(params: dict[str, Any]) -> Variant:
    name = params.get("variant")
    v = VARIANTS.get(name) if isinstance(name, str) else None
    if v is None:
        raise UnknownVariant(
            f"unknown variant {params.get('variant')!r} (expected one of {sorted(VARIANTS)})"
        )
    return v


class VideoPokerAdapter:
    game = GAME
    code_prefix = "JB"

    def prefix(self, params: dict[str, Any]) -> str:
        return CODE_PREFIX.get(params.get("variant", ""), "JB")

    def describe(self, params: dict[str, Any]) -> tuple[str, str, str]:
        v = _variant(params)
        return v.id, v.rules_version, v.paytable_id

    def stake_of(self, params: dict[str, Any]) -> int:
        v = _variant(params)
        engine.verify_deal(v, params["coin_value"], params["coins"], params["lines"])
        return engine.stake(params["coin_value"], params["coins"], params["lines"])

    def start(self, params: dict[str, Any], seed: bytes) -> engine.VideoPokerState:
        return engine.deal(
            _variant(params), params["coin_value"], params["coins"], params["lines"], seed
        )

    def apply(
        self,
        params: dict[str, Any],
        state: engine.VideoPokerState,
        decision: list[Any],
        seed: bytes,
    ) -> engine.VideoPokerState:
        if decision and decision[0] == HOLD:
            # The player's hold selection before the draw: recorded as its own step for
            # history and disputes; it changes no cards and no money.
            if len(decision) != 2:
                raise InvalidDecision(f"'hold' takes one list of positions, got {decision!r}")
            engine.verify_draw(state, decision[1], seed)
            return state
        return double_up.apply(state, decision, seed)

    def replay(
        self, params: dict[str, Any], decisions: list[list[Any]], seed: bytes
    ) -> engine.VideoPokerState:
        decisions = [d for d in decisions if not (d and d[0] == HOLD)]
        return double_up.replay(
            _variant(params),
            params["coin_value"],
            params["coins"],
            params["lines"],
            decisions,
            seed,
        )

    def default_decision(self, state: engine.VideoPokerState) -> list[Any]:
        return list(double_up.default_action(state).to_wire())

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


class VideoPokerCommands:
    """Player commands, mixed into :class:`~ledger.casino.Casino`."""

    def _held(self: Casino, session_id: str) -> list[int]:  # type: ignore[misc]  # mixin method typed against the composed Casino
        """The holds a bare ``["draw"]`` uses: the player's last ``hold`` step of the open
        round, else the game's proposal recorded at the deal."""
        rnd = self.open_round(session_id)
        if rnd is None or rnd.game != GAME:
            return []  # nothing to draw: the action itself will be refused
        for d in reversed(rnd.decisions):
            if d and d[0] == HOLD:
                return sorted(d[1])
        return list(rnd.view.get("recommended", []))

    def vp_deal(  # type: ignore[misc]  # mixin method typed against the composed Casino
        self: Casino,
        request_id: str,
        session_id: str,
        variant: str,
        coin_value: int,
        coins: int,
        lines: int,
    ) -> Result:
        params = {"variant": variant, "coin_value": coin_value, "coins": coins, "lines": lines}
        return self.start_round(
            request_id, f"session:{session_id}", session_id, GAME, params, "vp_deal"
        )

    def vp_act(self: Casino, request_id: str, session_id: str, decision: list[Any]) -> Result:  # type: ignore[misc]  # mixin method typed against the composed Casino
        """``["draw", [holds]]``, ``["collect"]``, ``["double"]``, ``["half-double"]``,
        ``["pick", index]``."""
        if not isinstance(decision, list | tuple) or not decision:
            raise InvalidDecision(
                f"a decision is a list such as ['draw', [0, 2]] or ['collect'], got {decision!r}"
            )
        decision = list(decision)
        if decision == ["draw"]:
            decision = ["draw", self._held(session_id)]
        name = str(decision[0])
        return self.act(
            request_id, f"session:{session_id}", session_id, list(decision), f"vp_{name}"
        )
