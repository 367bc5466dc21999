"""Handlers of the player's Jacks or Better commands (seeds 000 and 004).

A draw sent without holds draws with the player's last hold step, else the proposed
holds: that default is read here, inside the unit of work, from the round as it stands
(the rule itself is :func:`games.video_poker.hold.holds_for_draw`).
"""

from __future__ import annotations

from games.video_poker.adapter import GAME, VideoPokerAdapter, VideoPokerParams
from games.video_poker.engine import Decision
from games.video_poker.hold import holds_for_draw
from ledger import commands as c
from ledger.play import Rounds
from ledger.results import RoundPlayed
from ledger.unit_of_work import UnitOfWork


class VideoPokerMachine:
    def __init__(self, rounds: Rounds, adapter: VideoPokerAdapter) -> None:
        self.rounds = rounds
        self.adapter = adapter

    def deal(self, uow: UnitOfWork, cmd: c.VideoPokerDeal) -> RoundPlayed:
        session = uow.session(cmd.session_id)
        params = VideoPokerParams(cmd.variant, cmd.coin_value, cmd.coins, cmd.lines)
        return self.rounds.start(uow, session, self.adapter, params)

    def draw(self, uow: UnitOfWork, cmd: c.VideoPokerDraw) -> RoundPlayed:
        if cmd.holds is not None:
            return self.decide(uow, cmd)
        session = uow.session(cmd.session_id)
        rnd = self.rounds.playing(uow, session, GAME)
        steps = [self.adapter.read_decision(d) for d in rnd.decisions]
        state = self.rounds.state_of(self.adapter, rnd)
        holds = holds_for_draw(steps, state)
        return self.rounds.act(session, rnd, self.adapter, Decision.draw(holds))

    def decide(self, uow: UnitOfWork, cmd: c.GameDecision[RoundPlayed]) -> RoundPlayed:
        """hold, draw with holds, collect, double, half-double, pick."""
        session = uow.session(cmd.session_id)
        rnd = self.rounds.playing(uow, session, GAME)
        step = self.adapter.read_decision(cmd.decision())
        return self.rounds.act(session, rnd, self.adapter, step)
