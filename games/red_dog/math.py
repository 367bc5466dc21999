"""Exact Red Dog return-to-player and outcome distribution (seed 003), in fractions.

One 52-card deck without replacement: the first two cards are an ordered pair of distinct
cards (52 x 51), the third comes from the 50 left. Per ordered pair of first cards:

- a pair of ranks: 13 ranks x 4 x 3 = 156 of 2,652, i.e. 1/17; then 2 of the 50 cards
  make three of a kind (pays 11:1), the rest push;
- ranks ``d`` apart (``spread = d - 1``): 2 x (13 - d) ordered rank pairs x 16 suit pairs,
  i.e. ``32 (12 - spread) / 2652``; spread 0 (consecutive) pushes; otherwise
  ``4 spread`` of the 50 cards lie strictly between and win ``PAYS[spread]``.

A raise of ``r`` (a fraction of the original bet) on spread ``s`` wins or loses with the
bet, so its conditional expectation per unit raised is ``p (1 + PAYS[s]) - 1`` with
``p = 4 s / 50``. It is linear in ``r``: raise the full original bet iff that is positive,
which is exactly for spreads 7..11 (spread 7: 28/50 x 2 - 1 = +3/25; spread 6:
24/50 x 2 - 1 = -1/25; spreads 1..5 are all negative).

RTP is reported two ways: per unit of original bet (1 + E[net] / bet, i.e. the house edge
on the original bet) and per unit staked (E[payout] / E[bet + raise], the money returned
over the money wagered). Without raises the two agree. ``brute_force`` re-derives the same
figures by walking all 52 x 51 x 50 ordered deals through the engine's own settlement
functions.

The figures (checked by tests/certification/test_red_dog_settlement.py):

- never raising: 15052/16575 = 90.811463 % (both definitions);
- optimal raising (spreads 7..11): 16052/16575 = 96.844646 % per original bet, which is
  seed 003's published "96,84 %"; per unit staked it is 19052/19575 = 97.328225 %.

>>> as_percent(optimal().rtp_per_bet, 2)
Decimal('96.84')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import permutations

from games.cards import full_deck
from games.percent import as_percent as as_percent  # re-exported (catalogue, doctest above)
from games.red_dog.engine import PAYS, THREE_OF_A_KIND_PAYS, Outcome, outcome_for, payout_for

SPREADS = tuple(range(1, 12))
ORDERED_DEALS = 52 * 51 * 50
_REST = 50  # cards left for the third card


@dataclass(frozen=True, slots=True)
class RtpReport:
    """Exact figures for one raise policy, all per unit of original bet.

    ``raise_spreads`` are the spreads on which the player raises the full original bet.
    """

    raise_spreads: frozenset[int]
    outcomes: Mapping[Outcome, Fraction]
    expected_return: Fraction
    expected_staked: Fraction
    expected_net_squared: Fraction

    @property
    def expected_net(self) -> Fraction:
        """E[payout - bet - raise]: the player's expected result (negative: house edge)."""
        return self.expected_return - self.expected_staked

    @property
    def rtp_per_bet(self) -> Fraction:
        """1 + E[net] / original bet: the house edge measured on the original bet (the
        raise is a second wager whose own return is folded in)."""
        return 1 + self.expected_net

    @property
    def rtp_per_staked(self) -> Fraction:
        """E[payout] / E[bet + raise]."""
        return self.expected_return / self.expected_staked

    @property
    def house_edge_per_bet(self) -> Fraction:
        return 1 - self.rtp_per_bet

    @property
    def house_edge_per_staked(self) -> Fraction:
        return 1 - self.rtp_per_staked

    @property
    def variance(self) -> Fraction:
        """Variance of the player's net result per unit of original bet."""
        mean = self.expected_net
        return self.expected_net_squared - mean * mean


def pair_probability() -> Fraction:
    """P(the first two cards are a pair) = 3/51."""
    return Fraction(13 * 4 * 3, 52 * 51)


def spread_probability(spread: int) -> Fraction:
    """P(the first two cards have this spread); spread 0 means consecutive ranks."""
    if not 0 <= spread <= 11:
        raise ValueError(f"spread must be 0..11, got {spread}")
    return Fraction(2 * (12 - spread) * 16, 52 * 51)


def win_probability(spread: int) -> Fraction:
    """P(the third card falls strictly between), from the 50 cards left."""
    return Fraction(4 * spread, _REST)


def three_of_a_kind_probability() -> Fraction:
    """P(third card matches a pair), from the 50 cards left: 2/50."""
    return Fraction(2, _REST)


def raise_edge(spread: int) -> Fraction:
    """Expected net result per unit raised on ``spread``: p (1 + PAYS[spread]) - 1."""
    return win_probability(spread) * (1 + PAYS[spread]) - 1


def optimal_raise_spreads() -> frozenset[int]:
    """Spreads on which raising the full original bet has positive expectation."""
    return frozenset(s for s in SPREADS if raise_edge(s) > 0)


def analyse(raise_spreads: frozenset[int] = frozenset()) -> RtpReport:
    """Closed-form figures when the full original bet is raised on ``raise_spreads``."""
    _check_policy(raise_spreads)
    outcomes: dict[Outcome, Fraction] = dict.fromkeys(Outcome, Fraction(0))
    ret = Fraction(0)
    staked = Fraction(0)
    net2 = Fraction(0)

    p0 = spread_probability(0)
    outcomes[Outcome.PUSH_CONSECUTIVE] += p0
    ret += p0
    staked += p0

    pp = pair_probability()
    p3 = three_of_a_kind_probability()
    outcomes[Outcome.THREE_OF_A_KIND] += pp * p3
    outcomes[Outcome.PUSH_PAIR] += pp * (1 - p3)
    ret += pp * (p3 * (1 + THREE_OF_A_KIND_PAYS) + (1 - p3))
    staked += pp
    net2 += pp * p3 * THREE_OF_A_KIND_PAYS**2

    for s in SPREADS:
        ps = spread_probability(s)
        pw = win_probability(s)
        stake = 2 if s in raise_spreads else 1
        outcomes[Outcome.WIN] += ps * pw
        outcomes[Outcome.LOSE] += ps * (1 - pw)
        ret += ps * pw * stake * (1 + PAYS[s])
        staked += ps * stake
        net2 += ps * (pw * (stake * PAYS[s]) ** 2 + (1 - pw) * stake**2)

    return RtpReport(frozenset(raise_spreads), outcomes, ret, staked, net2)


def no_raise() -> RtpReport:
    """The player always sees (the default action)."""
    return analyse(frozenset())


def optimal() -> RtpReport:
    """The player raises the full original bet exactly when it pays to."""
    return analyse(optimal_raise_spreads())


def brute_force(raise_spreads: frozenset[int] = frozenset()) -> RtpReport:
    """The same figures by enumerating every ordered deal of three distinct cards and
    settling it with the engine's :func:`outcome_for` / :func:`payout_for` (bet 1, raise 1
    on ``raise_spreads``). For a push on consecutive cards the third card is never shown,
    but counting it keeps every ordered deal equally likely."""
    _check_policy(raise_spreads)
    counts: dict[Outcome, int] = dict.fromkeys(Outcome, 0)
    ret = staked = net2 = 0
    ranks = [card.rank for card in full_deck()]
    for a, b, c in permutations(range(52), 3):
        first, second, third = ranks[a], ranks[b], ranks[c]
        outcome = outcome_for(first, second, third)
        spread = None if first == second else abs(first - second) - 1
        stake = 2 if spread in raise_spreads else 1
        payout = payout_for(outcome, spread, stake)
        counts[outcome] += 1
        ret += payout
        staked += stake
        net2 += (payout - stake) ** 2
    return RtpReport(
        frozenset(raise_spreads),
        {o: Fraction(n, ORDERED_DEALS) for o, n in counts.items()},
        Fraction(ret, ORDERED_DEALS),
        Fraction(staked, ORDERED_DEALS),
        Fraction(net2, ORDERED_DEALS),
    )


def _check_policy(raise_spreads: frozenset[int]) -> None:
    # seed 003: a raise is only offered once a spread of 1..11 is shown.
    if not raise_spreads <= set(SPREADS):
        raise ValueError(f"raises are only possible on spreads 1..11, got {sorted(raise_spreads)}")
