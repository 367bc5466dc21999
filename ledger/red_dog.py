"""Red Dog on the ledger: adapter over ``games.red_dog`` and the player's commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from games.red_dog import engine as rd
from ledger.errors import InvalidRequest
from ledger.play import Result

if TYPE_CHECKING:
    from ledger.accounts import GameSession
    from ledger.casino import Casino

GAME = "red-dog"


class RedDogAdapter:
    game = GAME
    code_prefix = "RD"

    def __init__(self, rules: rd.RedDogRules = rd.DEFAULT_RULES) -> None:
        self.rules = rules

    def _rules(self, params: dict[str, Any]) -> rd.RedDogRules:
        return rd.RedDogRules(min_bet=params["min_bet"], max_bet=params["max_bet"])

    def params(self, bet: int) -> dict[str, Any]:
        return {"bet": bet, "min_bet": self.rules.min_bet, "max_bet": self.rules.max_bet}

    def describe(self, params: dict[str, Any]) -> tuple[str, str, str]:
        return "classic", self._rules(params).rules_version, rd.PAYTABLE_ID

    def stake_of(self, params: dict[str, Any]) -> int:
        rd.verify_deal(self._rules(params), params["bet"])
        return int(params["bet"])

    def start(self, params: dict[str, Any], seed: bytes) -> rd.RedDogState:
        return rd.deal(self._rules(params), params["bet"], seed)

    def apply(
        self, params: dict[str, Any], state: rd.RedDogState, decision: list[Any], seed: bytes
    ) -> rd.RedDogState:
        return rd.apply(state, decision, seed)

    def replay(
        self, params: dict[str, Any], decisions: list[list[Any]], seed: bytes
    ) -> rd.RedDogState:
        return rd.replay(self._rules(params), params["bet"], decisions, seed)

    def default_decision(self, state: rd.RedDogState) -> list[Any]:
        return list(rd.default_action(state).to_wire())

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


class RedDogCommands:
    """Player commands, mixed into :class:`~ledger.casino.Casino`."""

    def red_dog_bet(self: Casino, request_id: str, session_id: str, bet: int) -> Result:  # type: ignore[misc]  # mixin method typed against the composed Casino
        adapter = self.adapters[GAME]
        assert isinstance(adapter, RedDogAdapter)
        return self.start_round(
            request_id,
            f"session:{session_id}",
            session_id,
            GAME,
            adapter.params(bet),
            "red_dog_bet",
        )

    def red_dog_raise(self: Casino, request_id: str, session_id: str, amount: int) -> Result:  # type: ignore[misc]  # mixin method typed against the composed Casino
        return self.act(
            request_id, f"session:{session_id}", session_id, ["raise", amount], "red_dog_raise"
        )

    def red_dog_see(self: Casino, request_id: str, session_id: str) -> Result:  # type: ignore[misc]  # mixin method typed against the composed Casino
        return self.act(request_id, f"session:{session_id}", session_id, ["see"], "red_dog_see")

    def red_dog_repeat(self: Casino, request_id: str, session_id: str) -> Result:  # type: ignore[misc]  # mixin method typed against the composed Casino
        """seed 003 "Ripeti": the same bet as the last Red Dog round, dealt at once."""
        adapter = self.adapters[GAME]
        assert isinstance(adapter, RedDogAdapter)

        def last_bet(session: GameSession) -> dict[str, Any]:
            last = session.last_stake
            if not last or last.get("game") != GAME:
                raise InvalidRequest(
                    "no previous Red Dog bet in this session to repeat", session_id=session_id
                )
            return adapter.params(int(last["params"]["bet"]))

        return self.start_round(
            request_id, f"session:{session_id}", session_id, GAME, last_bet, "red_dog_repeat"
        )
