"""Certification simulation: many rounds through the real engines from one master seed.

Round ``i`` of a simulation is dealt from ``round_seed(master, i)`` =
``HMAC-SHA256(master, b"croupier-sim/v1" || 0x00 || i as 8 big-endian bytes)``, so a run
is reproducible from the master seed alone and any single round can be re-derived. The
same :class:`RoundSeeds` is the ledger's ``seed_source`` in the ledger-level simulation
(:mod:`ledger.simulate`), which therefore deals the very same cards.

Every round goes through the production code path: video poker
``engine.deal`` -> ``engine.draw`` -> ``double_up.collect`` (never a double-up), Red Dog
``deal`` -> ``raise_bet`` / ``see``. The simulated player decides with
:func:`choose_holds` / :func:`choose_raise`:

- video poker, :attr:`Play.OPTIMAL`: the max-EV hold (:func:`strategy.optimal_hold`, seed
  004's recommended hold); :attr:`Play.WINNING_CARDS`: seed 000's proposal. When the
  variant proposes the same policy, the engine's own ``recommended`` holds are taken (the
  same function computed them);
- Red Dog, :attr:`RaisePolicy.OPTIMAL`: raise the full original bet on spreads 7..11
  (:func:`games.red_dog.math.optimal_raise_spreads`); :attr:`RaisePolicy.NEVER`: see.

>>> tally = simulate(RedDogPlan(rounds=20), b"m" * 32)
>>> tally.rounds, tally.bet
(20, 2000)
>>> simulate(RedDogPlan(rounds=20), b"m" * 32) == tally  # same master seed, same rounds
True
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Final

from games.cards import Card
from games.errors import InvalidRules
from games.red_dog import engine as red_dog
from games.red_dog.math import optimal_raise_spreads
from games.rtp import (
    PER_STAKED,
    Interval,
    Measure,
    Reference,
    Tally,
    red_dog_references,
    video_poker_reference,
)
from games.video_poker import double_up, engine
from games.video_poker.math import Play
from games.video_poker.strategy import optimal_hold, winning_cards_hold
from games.video_poker.variants import VARIANTS, Variant

__all__ = [
    "Plan",
    "Play",
    "RaisePolicy",
    "RedDogPlan",
    "RoundSeeds",
    "VideoPokerPlan",
    "choose_holds",
    "choose_raise",
    "intervals",
    "play_round",
    "references",
    "round_seed",
    "simulate",
    "simulate_all",
    "theoretical",
]

_DOMAIN: Final = b"croupier-sim/v1\x00"


def round_seed(master: bytes, index: int) -> bytes:
    """The 32-byte seed of round ``index`` of the simulation keyed by ``master``.

    >>> round_seed(bytes(32), 0).hex()[:16]
    'c18aecaad3a649d4'
    """
    if not isinstance(master, bytes) or not master:
        raise ValueError("the master seed must be non-empty bytes")
    if index < 0:
        raise ValueError(f"round index must be >= 0, got {index}")
    return hmac.new(master, _DOMAIN + index.to_bytes(8, "big"), hashlib.sha256).digest()


class RoundSeeds:
    """A seed source: ``round_seed(master, start)``, then ``start + 1``, ... one per call
    (the ledger calls it once per round it starts)."""

    __slots__ = ("_master", "index")

    def __init__(self, master: bytes, start: int = 0) -> None:
        round_seed(master, start)  # validates
        self._master = master
        self.index = start
        """The index of the next seed handed out."""

    def __call__(self) -> bytes:
        seed = round_seed(self._master, self.index)
        self.index += 1
        return seed


class RaisePolicy(StrEnum):
    """How the simulated Red Dog player decides once a spread shows (wire format)."""

    OPTIMAL = "optimal"
    """Raise the full original bet exactly when it has positive expectation: 7..11."""
    NEVER = "never"
    """Always see (the default action)."""

    @property
    def raise_spreads(self) -> frozenset[int]:
        return optimal_raise_spreads() if self is RaisePolicy.OPTIMAL else frozenset()


# -- plans -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VideoPokerPlan:
    """``rounds`` rounds of one variant at one bet, played ``play``'s way, collecting."""

    variant: str
    coins: int
    lines: int
    rounds: int
    play: Play = Play.OPTIMAL
    coin_value: int = 10
    game: str = field(default="video-poker", init=False)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InvalidRules(f"unknown variant {self.variant!r}; one of {sorted(VARIANTS)}")
        engine.verify_deal(self.rules, self.coin_value, self.coins, self.lines)
        object.__setattr__(self, "play", Play(self.play))
        _check_rounds(self.rounds)

    @property
    def rules(self) -> Variant:
        return VARIANTS[self.variant]

    @property
    def label(self) -> str:
        return f"{self.variant} {self.coins} coin(s) x {self.lines} line(s), {self.play} play"


@dataclass(frozen=True, slots=True)
class RedDogPlan:
    """``rounds`` rounds of Red Dog at one bet under one raise policy."""

    rounds: int
    policy: RaisePolicy = RaisePolicy.OPTIMAL
    bet: int = 100
    rules: red_dog.RedDogRules = red_dog.DEFAULT_RULES
    game: str = field(default="red-dog", init=False)

    def __post_init__(self) -> None:
        red_dog.verify_deal(self.rules, self.bet)
        object.__setattr__(self, "policy", RaisePolicy(self.policy))
        if self.policy is RaisePolicy.OPTIMAL and 2 * self.bet > self.rules.max_bet:
            # The certified figure raises the full bet; the table limit would cap it.
            raise InvalidRules(
                f"the optimal policy raises the full bet: bet {self.bet} must be at most "
                f"half the table maximum {self.rules.max_bet}"
            )
        _check_rounds(self.rounds)

    @property
    def label(self) -> str:
        return f"red-dog bet {self.bet}, {self.policy} raise"


Plan = VideoPokerPlan | RedDogPlan


def _check_rounds(rounds: int) -> None:
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
        raise ValueError(f"rounds must be an int >= 0, got {rounds!r}")


# -- the player's decisions ------------------------------------------------------------


def choose_holds(
    variant: Variant,
    dealt: Sequence[Card],
    coins: int,
    play: Play,
    recommended: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """The holds ``play`` keeps. ``recommended`` (the game's proposal) is taken as is
    when the variant proposes by the same policy."""
    if recommended is not None and variant.hold_policy.value == play.value:
        return tuple(sorted(recommended))
    if play is Play.WINNING_CARDS:
        return winning_cards_hold(tuple(dealt))
    return tuple(sorted(optimal_hold(tuple(dealt), variant.paytable, coins).hold))


def choose_raise(spread: int | None, bet: int, policy: RaisePolicy) -> red_dog.Decision:
    """Raise the full original bet on the policy's spreads, else see."""
    if spread in policy.raise_spreads:
        return red_dog.Decision.raise_by(bet)
    return red_dog.Decision.see()


# -- playing ---------------------------------------------------------------------------


def play_round(plan: Plan, seed: bytes, tally: Tally) -> None:
    """Play one round of ``plan`` from ``seed`` through the engine and add it to ``tally``."""
    if isinstance(plan, RedDogPlan):
        state = red_dog.deal(plan.rules, plan.bet, seed)
        if not state.settled:
            state = red_dog.apply(state, choose_raise(state.spread, plan.bet, plan.policy), seed)
        outcome = state.outcome.value if state.outcome else "open"
        tally.add(plan.bet, state.staked, state.payout, 1, [(outcome, state.payout)])
        return
    variant = plan.rules
    vp = engine.deal(variant, plan.coin_value, plan.coins, plan.lines, seed)
    holds = choose_holds(variant, vp.dealt, plan.coins, plan.play, vp.recommended)
    vp = engine.draw(vp, holds, seed)
    if vp.phase is engine.Phase.WIN_PENDING:
        vp = double_up.collect(vp)
    assert vp.settled, "a collected round is settled"
    hands = [(line.rank.value, line.win) for line in vp.line_results]
    tally.add(vp.stake, vp.stake, vp.win, plan.lines, hands)


def simulate(plan: Plan, master: bytes, start: int = 0) -> Tally:
    """Play ``plan.rounds`` rounds from seeds ``start``, ``start + 1``, ... of ``master``."""
    tally = Tally()
    seeds = RoundSeeds(master, start)
    for _ in range(plan.rounds):
        play_round(plan, seeds(), tally)
    return tally


def simulate_all(plans: Sequence[Plan], master: bytes) -> list[Tally]:
    """Every plan in turn on one seed sequence: plan ``k`` starts where ``k - 1`` ended,
    as the ledger-level simulation plays them on one Casino."""
    out, start = [], 0
    for plan in plans:
        out.append(simulate(plan, master, start))
        start += plan.rounds
    return out


# -- what the rounds are compared with -------------------------------------------------


def references(plan: Plan) -> dict[Measure, Reference]:
    """The certified figures of ``plan``'s way of play, per measure (video poker: one,
    since nothing is staked after the deal; Red Dog: per bet and per staked)."""
    if isinstance(plan, RedDogPlan):
        return red_dog_references(plan.policy.raise_spreads)
    return {PER_STAKED: video_poker_reference(plan.rules.paytable, plan.coins, plan.play)}


def intervals(plan: Plan, tally: Tally, level: float = 0.99) -> dict[Measure, Interval]:
    """The observed RTP of each measure with its interval from the exact variance."""
    return {m: tally.interval(m, level, ref) for m, ref in references(plan).items()}


def theoretical(plan: Plan) -> dict[Measure, Fraction]:
    return {m: ref.rtp for m, ref in references(plan).items()}
