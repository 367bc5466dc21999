"""Handlers of the player's Red Dog commands (seed 003): bet, raise, see, repeat."""

from __future__ import annotations

from games.red_dog.adapter import GAME, RedDogAdapter
from games.red_dog.engine import Decision
from ledger.commands import RedDogBet, RedDogRaise, RedDogRepeat, RedDogSee
from ledger.errors import InvalidRequest
from ledger.play import Rounds
from ledger.results import RoundPlayed
from ledger.unit_of_work import UnitOfWork


class RedDogTable:
    def __init__(self, rounds: Rounds, adapter: RedDogAdapter) -> None:
        self.rounds = rounds
        self.adapter = adapter

    def bet(self, uow: UnitOfWork, cmd: RedDogBet) -> RoundPlayed:
        session = uow.session(cmd.session_id)
        return self.rounds.start(uow, session, self.adapter, self.adapter.params(cmd.bet))

    def repeat(self, uow: UnitOfWork, cmd: RedDogRepeat) -> RoundPlayed:
        """seed 003 "Ripeti": the same bet as the session's last Red Dog round."""
        session = uow.session(cmd.session_id)
        session.check_idle()
        last = session.last_stake
        if not last or last.get("game") != GAME:
            raise InvalidRequest(
                "no previous Red Dog bet in this session to repeat", session_id=cmd.session_id
            )
        bet = int(self.adapter.read_params(last["params"]).bet)
        return self.rounds.start(uow, session, self.adapter, self.adapter.params(bet))

    def raise_bet(self, uow: UnitOfWork, cmd: RedDogRaise) -> RoundPlayed:
        return self._decide(uow, cmd.session_id, cmd.decision())

    def see(self, uow: UnitOfWork, cmd: RedDogSee) -> RoundPlayed:
        return self._decide(uow, cmd.session_id, cmd.decision())

    def _decide(self, uow: UnitOfWork, session_id: str, wire: list[object]) -> RoundPlayed:
        session = uow.session(session_id)
        rnd = self.rounds.playing(uow, session, GAME)
        decision: Decision = self.adapter.read_decision(wire)
        return self.rounds.act(session, rnd, self.adapter, decision)
