"""Ledger-level certification simulation: the engine-level rounds, through Casino commands.

Each plan of :mod:`games.simulate` is played by one simulated player in its own game
session, with the real commands (``vp_deal`` / ``vp_act``, ``red_dog_bet`` /
``red_dog_raise`` / ``red_dog_see``), each signed and committed. The Casino's
``seed_source`` is :class:`games.simulate.RoundSeeds` of the master seed, and the player
decides from what the commands return (the cards shown, the proposed holds, the spread)
with the same :func:`~games.simulate.choose_holds` / :func:`~games.simulate.choose_raise`.
So ``simulate_on_ledger(open_casino(...), plans)`` deals the same cards, takes the same
decisions and must give the same tallies as :func:`games.simulate.simulate_all`; and its
event log, read back by ``audit-cli rtp``, must add up to those tallies.
"""

from __future__ import annotations

from collections.abc import Sequence

from games.cards import Card
from games.red_dog.engine import DecisionKind
from games.rtp import Tally
from games.simulate import Plan, RedDogPlan, RoundSeeds, choose_holds, choose_raise
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.contracts import RoundStatus
from ledger.keys import Keyring
from ledger.results import RoundPlayed
from ledger.settings import Settings

CURRENCY = "EUR"


def open_casino(settings: Settings, keyring: Keyring | None, master: bytes) -> Casino:
    """A Casino whose rounds are seeded by ``RoundSeeds(master)`` instead of the CSPRNG."""
    return bootstrap(settings, keyring, seed_source=RoundSeeds(master))


def simulate_on_ledger(app: Casino, plans: Sequence[Plan], player_id: str = "sim") -> list[Tally]:
    """Play every plan in turn, each in a fresh session of ``player_id`` (an account is
    opened and funded with exactly what the worst case could stake). Returns one tally per
    plan, from the commands' own results."""
    rid = f"sim:{player_id}"
    app.open_account(f"{rid}:account", player_id, CURRENCY)
    tallies = []
    for k, plan in enumerate(plans):
        buy_in = max(1, plan.rounds * _max_stake(plan))
        app.deposit(f"{rid}:{k}:deposit", player_id, buy_in)
        session = app.open_session(f"{rid}:{k}:open", player_id, buy_in).session_id
        tally = Tally()
        for i in range(plan.rounds):
            _play(app, session, plan, f"{rid}:{k}:{i}", tally)
        app.close_session(f"{rid}:{k}:close", session)
        tallies.append(tally)
    return tallies


def _max_stake(plan: Plan) -> int:
    if isinstance(plan, RedDogPlan):
        return 2 * plan.bet  # bet plus a raise of at most the bet (seed 003)
    return plan.coin_value * plan.coins * plan.lines


def _play(app: Casino, session: str, plan: Plan, rid: str, tally: Tally) -> None:
    if isinstance(plan, RedDogPlan):
        r = app.red_dog_bet(f"{rid}:bet", session, plan.bet)
        if r.status == RoundStatus.OPEN:
            decision = choose_raise(r.view["spread"], plan.bet, plan.policy)
            if decision.kind is DecisionKind.RAISE:
                r = app.red_dog_raise(f"{rid}:raise", session, decision.amount)
            else:
                r = app.red_dog_see(f"{rid}:see", session)
        _settled(r)
        tally.add(plan.bet, r.staked, r.payout, 1, [(str(r.outcome), r.payout)])
        return
    r = app.vp_deal(f"{rid}:deal", session, plan.variant, plan.coin_value, plan.coins, plan.lines)
    view = r.view
    dealt = [Card.parse(c) for c in view["dealt"]]
    holds = choose_holds(plan.rules, dealt, plan.coins, plan.play, view["recommended"])
    r = app.vp_act(f"{rid}:draw", session, ["draw", list(holds)])
    if r.status == RoundStatus.OPEN:  # a win is pending: collect it, never double up
        r = app.vp_act(f"{rid}:collect", session, ["collect"])
    _settled(r)
    hands = [(str(line["rank"]), int(line["win"])) for line in r.view["lines"]]
    tally.add(r.stake, r.staked, r.payout, plan.lines, hands)


def _settled(result: RoundPlayed) -> None:
    assert result.status == RoundStatus.SETTLED, f"round {result.code} is {result.status}"
