"""What an observed RTP is tested against: exact means and per-round variances, intervals.

An observed RTP is a ratio of money, ``paid / staked`` over many rounds. Under the
certified maths each round's return has a known mean and variance, so the normal
approximation gives a confidence interval with the *exact* variance. The sample variance
is the fallback when no theory applies (mixed play): at five coins a royal flush, about
1 deal in 40,000, carries 80 % of the variance, and a sample that has not met one
understates the spread by half.

Video poker, several lines per round. The lines share the five dealt cards and the holds,
then each draws from its own deck (DESIGN.md section 5.1), so they are independent given
the deal but correlated through it. Per coin bet, with ``m(d)`` the expected return of
one line given deal ``d`` under the chosen hold::

    Var(one line)              = E[X^2] - rtp^2                       (``variance``)
    Cov(two lines, same deal)  = E[m(d)^2] - rtp^2                     (``covariance``)
    Var(mean of L lines)       = covariance + (variance - covariance) / L

which is why the interval of a multi-line game comes from per-round returns, never from
per-line ones. Both moments are exact fractions over all C(52,5) deals and every draw
(the same enumeration and holds as :mod:`games.video_poker.math`).

Red Dog. Per original bet the return ``1 + net / bet`` has the variance of
:attr:`games.red_dog.math.RtpReport.variance`. Per unit staked, the ratio
``sum(paid) / sum(staked)`` has to first order (delta method) the variance of
``payout - rho * staked`` with ``rho`` the per-staked RTP, per unit of original bet.

Over rounds of original bets ``b_i`` (lines ``L_i``), the observed ratio
``sum(numerator) / sum(denominator)`` has variance
``sum(b_i^2 * unit_variance(L_i)) / sum(denominator)^2``, which :class:`Tally` keeps.

>>> ref = red_dog_references(frozenset(range(7, 12)))
>>> float(ref[PER_BET].rtp), float(ref[PER_STAKED].rtp)  # doctest: +ELLIPSIS
(0.968446..., 0.973282...)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from math import gcd, isfinite, sqrt
from statistics import NormalDist
from typing import Final, Literal

import numpy as np

from games.poker import HAND_RANKS
from games.red_dog import math as red_dog_math
from games.red_dog.engine import PAYS, THREE_OF_A_KIND_PAYS
from games.video_poker import math as vp_math
from games.video_poker import strategy
from games.video_poker.math import DEALS, Play, deal_classes
from games.video_poker.paytable import Paytable

PER_STAKED: Final = "per-staked"
"""``sum(paid) / sum(staked)``: money returned over money wagered (raises included)."""
PER_BET: Final = "per-bet"
"""``1 + sum(net) / sum(original bets)``: Red Dog's published measure (seed 003)."""
Measure = Literal["per-staked", "per-bet"]
Basis = Literal["exact", "sample"]
_CHUNK: Final = 4096


def z_score(level: float) -> float:
    """The two-sided normal quantile of a confidence level.

    >>> round(z_score(0.99), 4), round(z_score(0.999), 4)
    (2.5758, 3.2905)
    """
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf((1 + level) / 2)


@dataclass(frozen=True, slots=True)
class Interval:
    """An observed RTP with its confidence interval ``observed +/- z(level) * sd``.

    ``sd`` is the standard deviation of the observed ratio: from the certified maths
    (``basis="exact"``) or from the rounds themselves (``"sample"``).

    >>> i = Interval(Fraction(99, 100), 0.01, 0.99, "exact")
    >>> round(i.low, 4), round(i.high, 4), i.contains(Fraction(1)), i.contains(Fraction(1, 2))
    (0.9642, 1.0158, True, False)
    """

    observed: Fraction
    sd: float
    level: float
    basis: Basis

    @property
    def known(self) -> bool:
        """False when there is no spread to measure (one round, sample variance): the
        interval is then unbounded and says nothing."""
        return isfinite(self.sd)

    @property
    def half_width(self) -> float:
        return z_score(self.level) * self.sd

    @property
    def low(self) -> float:
        return float(self.observed) - self.half_width

    @property
    def high(self) -> float:
        return float(self.observed) + self.half_width

    def contains(self, value: Fraction) -> bool:
        return abs(float(self.observed - value)) <= self.half_width


@dataclass(frozen=True, slots=True)
class Reference:
    """The certified figures of one way of play, per unit of original bet: the RTP, the
    variance of one round's return, and (video poker) the covariance of two lines dealt
    the same cards; for a single-line game ``covariance == variance``."""

    rtp: Fraction
    variance: Fraction
    covariance: Fraction

    def round_variance(self, lines: int = 1) -> Fraction:
        """Variance of a round's return per unit of original bet when it plays ``lines``."""
        if lines < 1:
            raise ValueError(f"a round plays at least one line, got {lines}")
        return self.covariance + (self.variance - self.covariance) / lines


@dataclass
class Tally:
    """Running totals of settled rounds: what an RTP, its interval and a per-hand audit
    need. An accumulator (``add`` changes it), not a value; amounts are int minor units.

    ``hands`` counts final hands per line (video poker) or outcomes (Red Dog), and
    ``hand_paid`` what they paid.

    >>> t = Tally()
    >>> t.add(bet=100, staked=200, paid=400, hands=[("win", 400)])
    >>> t.add(bet=100, staked=100, paid=0, hands=[("lose", 0)])
    >>> t.observed(PER_STAKED), t.observed(PER_BET)
    (Fraction(4, 3), Fraction(3, 2))
    """

    rounds: int = 0
    bet: int = 0
    staked: int = 0
    paid: int = 0
    bet_squares: dict[int, int] = field(default_factory=dict)
    """Sum of squared original bets, by lines per round (the exact variance's weights)."""
    hands: Counter[str] = field(default_factory=Counter)
    hand_paid: Counter[str] = field(default_factory=Counter)
    # Sample-variance sums: per staked (payout over staked), per bet (bet + net over bet).
    _pp: int = field(default=0, repr=False)
    _ps: int = field(default=0, repr=False)
    _ss: int = field(default=0, repr=False)
    _vv: int = field(default=0, repr=False)
    _vb: int = field(default=0, repr=False)

    def add(
        self,
        bet: int,
        staked: int,
        paid: int,
        lines: int = 1,
        hands: Iterable[tuple[str, int]] = (),
    ) -> None:
        self.rounds += 1
        self.bet += bet
        self.staked += staked
        self.paid += paid
        self.bet_squares[lines] = self.bet_squares.get(lines, 0) + bet * bet
        for hand, amount in hands:
            self.hands[hand] += 1
            self.hand_paid[hand] += amount
        v = bet + paid - staked
        self._pp += paid * paid
        self._ps += paid * staked
        self._ss += staked * staked
        self._vv += v * v
        self._vb += v * bet

    def merge(self, other: Tally) -> None:
        """Add another tally's rounds to this one."""
        for name in ("rounds", "bet", "staked", "paid", "_pp", "_ps", "_ss", "_vv", "_vb"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for lines, squares in other.bet_squares.items():
            self.bet_squares[lines] = self.bet_squares.get(lines, 0) + squares
        self.hands.update(other.hands)
        self.hand_paid.update(other.hand_paid)

    def _ratio(self, measure: Measure) -> tuple[int, int]:
        if measure == PER_STAKED:
            return self.paid, self.staked
        return self.bet + self.paid - self.staked, self.bet

    def observed(self, measure: Measure = PER_STAKED) -> Fraction:
        numerator, denominator = self._ratio(measure)
        if denominator <= 0:
            raise ValueError("no settled stake: no RTP to observe")
        return Fraction(numerator, denominator)

    def interval(
        self, measure: Measure, level: float, reference: Reference | None = None
    ) -> Interval:
        """The observed RTP's interval: with the exact variance of ``reference``, or the
        sample variance without one."""
        observed = self.observed(measure)
        _, denominator = self._ratio(measure)
        if reference is not None:
            total = sum(
                (sq * reference.round_variance(lines) for lines, sq in self.bet_squares.items()),
                Fraction(0),
            )
            return Interval(observed, sqrt(float(total)) / denominator, level, "exact")
        return Interval(observed, self._sample_sd(measure, observed), level, "sample")

    def _sample_sd(self, measure: Measure, r: Fraction) -> float:
        if self.rounds < 2:
            return float("inf")
        if measure == PER_STAKED:
            residual = self._pp - 2 * r * self._ps + r * r * self._ss
            denominator = self.staked
        else:
            residual = self._vv - 2 * r * self._vb + r * r * sum(self.bet_squares.values())
            denominator = self.bet
        # Residuals about the ratio; n / (n - 1) for the estimated ratio.
        return sqrt(float(residual) * self.rounds / (self.rounds - 1)) / denominator


# -- video poker ---------------------------------------------------------------------


def video_poker_reference(paytable: Paytable, coins: int, play: Play = Play.OPTIMAL) -> Reference:
    """One coin column's figures per coin bet (about a second on first use, then cached).

    Proportional columns (9/6: 1 to 4 coins) choose the same holds and share one pass:
    column ``coins`` pays ``divisor * shape``, i.e. ``divisor / coins * shape`` per coin.
    """
    amounts = [paytable.payout(r, coins) for r in HAND_RANKS]
    divisor = gcd(*amounts) or 1
    first, second, squares = _shape_sums(tuple(a // divisor for a in amounts), play)
    unit = Fraction(divisor, coins)
    rtp = unit * first
    return Reference(rtp, unit * unit * second - rtp**2, unit * unit * squares - rtp**2)


@cache
def _shape_sums(shape: tuple[int, ...], play: Play) -> tuple[Fraction, Fraction, Fraction]:
    """``E[X]``, ``E[X^2]`` and ``E[m(d)^2]`` for one line paid ``shape`` per rank."""
    columns, weights = deal_classes()
    pays = np.array(shape, dtype=np.int64)
    first = second = squares = 0
    for start in range(0, len(weights), _CHUNK):
        chunk = [c[start : start + _CHUNK] for c in columns]
        w = weights[start : start + _CHUNK]
        scaled = strategy.scale_counts(strategy.final_counts_batch(chunk))
        if play is Play.WINNING_CARDS:
            # The maths' own vectorised seed-000 proposal: one definition of that hold
            # for the RTP and for its variance.
            best = vp_math._winning_cards_masks(chunk)
        else:
            ev = np.asarray(scaled @ pays.astype(np.float64), dtype=np.float64)  # exact below 2**53
            best = strategy.choose_batch(scaled, ev)
        dist = scaled[best, np.arange(len(w))].astype(np.int64)  # per deal: P(rank) x SCALE
        mean = dist @ pays  # m(d) x SCALE, exact (below 2**45)
        first += int(w @ mean)
        second += int(w @ (dist @ (pays * pays)))
        # m(d)^2 x SCALE^2 overflows int64: Python ints, exactly.
        squares += sum(a * b * b for a, b in zip(w.tolist(), mean.tolist(), strict=True))
    scale = strategy.SCALE
    return (
        Fraction(first, DEALS * scale),
        Fraction(second, DEALS * scale),
        Fraction(squares, DEALS * scale * scale),
    )


# -- Red Dog ---------------------------------------------------------------------------


@cache
def red_dog_references(raise_spreads: frozenset[int]) -> dict[Measure, Reference]:
    """Both measures when the full original bet is raised on ``raise_spreads``: per bet,
    the variance of ``1 + net / bet``; per staked, of ``payout - rho * staked``."""
    report = red_dog_math.analyse(raise_spreads)
    rho = report.rtp_per_staked
    # (probability, payout, staked) per unit of original bet, over every way a round ends.
    ends: list[tuple[Fraction, int, int]] = [(red_dog_math.spread_probability(0), 1, 1)]
    pair, trips = red_dog_math.pair_probability(), red_dog_math.three_of_a_kind_probability()
    ends += [(pair * trips, 1 + THREE_OF_A_KIND_PAYS, 1), (pair * (1 - trips), 1, 1)]
    for s in red_dog_math.SPREADS:
        p, win = red_dog_math.spread_probability(s), red_dog_math.win_probability(s)
        stake = 2 if s in raise_spreads else 1
        ends += [(p * win, stake * (1 + PAYS[s]), stake), (p * (1 - win), 0, stake)]
    assert sum(p for p, _, _ in ends) == 1, "every way a round ends is counted once"
    linear = sum((p * (paid - rho * staked) ** 2 for p, paid, staked in ends), Fraction(0))
    return {
        PER_BET: Reference(report.rtp_per_bet, report.variance, report.variance),
        PER_STAKED: Reference(rho, linear, linear),
    }
