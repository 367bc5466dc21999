"""Recommended holds: seed 000's "winning cards" proposal and the exact max-EV hold.

A hold is a sorted tuple of card positions 0..4 in the dealt hand. Expected values are
exact: the draw is uniform over the 47 cards not dealt (each line of a multi-line game
draws from its own 47-card deck, DESIGN.md section 5.1, so one line's EV is the hand's).

How ``optimal_hold`` is fast (the classic subset-count technique). At start-up
:func:`prepare` classifies all C(52,5) = 2,598,960 hands and counts, for every set ``S``
of at most five cards, how many five-card hands of each :class:`~games.poker.HandRank`
contain ``S``. For a dealt hand ``D`` and a hold ``H`` the final hands are exactly the
five-card hands that contain ``H`` and no discarded card, so by inclusion-exclusion over
the discards ``X = D - H``::

    final(H) = sum over T subset of X of (-1)^|T| * count(H + T)

All 32 holds at once are the superset Moebius transform of the 32 rows ``count(S)`` for
``S`` a subset of ``D``; the EV of ``H`` is ``final(H) . pays / C(47, 5 - |H|)``. The
unit tests check this against brute-force enumeration of every draw.

Tie-break, when several holds share the maximal EV (deterministic, and unchanged by
renaming suits, so the maths over suit classes equals the maths over all deals): keep
the hold with more cards; then the one more likely to end in a royal flush, then in a
straight flush, and so on down the ranks; then the lowest bitmask of positions (bit
``i`` = position ``i``), which only separates holds with identical outcome distributions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import combinations
from math import comb, lcm
from typing import Final

import numpy as np
import numpy.typing as npt

from games.cards import Card
from games.poker import HAND_RANKS, InvalidHand, rank_code
from games.video_poker.paytable import Paytable

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Columns = Sequence[npt.NDArray[np.integer]]

HOLDS: Final = 32
N_RANKS: Final = len(HAND_RANKS)
_POP: Final = tuple(bin(m).count("1") for m in range(HOLDS))
_HIGH: Final = tuple(m.bit_length() - 1 for m in range(HOLDS))
WAYS: Final = tuple(comb(47, 5 - _POP[m]) for m in range(HOLDS))
"""Number of equally likely draws (from 47 cards) for the hold with bitmask ``m``."""
SCALE: Final = lcm(*WAYS)
"""7,669,695: a hold's final-hand counts times ``SCALE // WAYS[m]`` are on one common
denominator, so EVs and outcome profiles compare exactly as integers."""
_FACTOR: Final = np.array([SCALE // w for w in WAYS], dtype=np.int32)
_POP_ARRAY: Final = np.array(_POP, dtype=np.int32)
_MASK_COLUMN: Final = np.arange(HOLDS, dtype=np.intp)[:, None]


@dataclass(frozen=True, slots=True)
class HoldAdvice:
    """The max-EV hold of one dealt hand: positions to keep and the exact EV of one line
    (a multiplier of the coin value, as in the paytable)."""

    hold: tuple[int, ...]
    ev: Fraction


# -- seed 000's proposal ---------------------------------------------------------------


def winning_cards_hold(hand: Sequence[Card]) -> tuple[int, ...]:
    """Seed 000: "propone automaticamente di tenere le carte ... che permettono di
    realizzare una mano vincente" -- hold the cards that already make the paying hand.

    Our reading: a pair of jacks or better holds the pair; two pair the four cards;
    trips the three; four of a kind the four (the kicker cannot improve it); straight,
    flush, full house, straight flush and royal flush hold all five. A hand that pays
    nothing (a low pair included) holds nothing. In short: if the hand pays, keep the
    cards whose rank repeats, or all five when none does.

    >>> from games.cards import parse_cards
    >>> winning_cards_hold(parse_cards("Jc 2h Jd 5s 9c"))
    (0, 2)
    >>> winning_cards_hold(parse_cards("Tc Td 2h 5s 9c"))
    ()
    """
    ids = _hand_ids(hand)
    if rank_code(*ids) == 0:
        return ()
    ranks = [i >> 2 for i in ids]
    repeated = tuple(p for p in range(5) if ranks.count(ranks[p]) > 1)
    return repeated or (0, 1, 2, 3, 4)


# -- exact EVs of one hand -------------------------------------------------------------


def prepare() -> None:
    """Build the subset-count tables now (about 0.2-0.4 s and 40 MB) rather than on the
    first call of :func:`optimal_hold` or :func:`hold_evs`."""
    _tables()


def hold_evs(
    hand: Sequence[Card], paytable: Paytable, coins: int
) -> dict[tuple[int, ...], Fraction]:
    """The exact EV of one line for each of the 32 holds, keyed by held positions.

    >>> from games.cards import parse_cards
    >>> from games.video_poker.paytable import JACKS_OR_BETTER_9_6
    >>> evs = hold_evs(parse_cards("Ah Kh Qh Jh Th"), JACKS_OR_BETTER_9_6, 5)
    >>> evs[(0, 1, 2, 3, 4)], evs[()] < 2, len(evs)
    (Fraction(4000, 1), True, 32)
    """
    _, to_sorted, totals = _hold_totals(_hand_ids(hand), _pay_vector(paytable, coins))
    return {_POSITIONS[mask]: Fraction(totals[s], WAYS[s]) for mask, s in enumerate(to_sorted)}


def optimal_hold(hand: Sequence[Card], paytable: Paytable, coins: int) -> HoldAdvice:
    """The hold with the highest exact EV (tie-break in the module docstring).

    >>> from games.cards import parse_cards
    >>> from games.video_poker.paytable import JACKS_OR_BETTER_9_6 as JB
    >>> optimal_hold(parse_cards("Ah Kh Qh Jh 2c"), JB, 5).hold
    (0, 1, 2, 3)
    >>> optimal_hold(parse_cards("Jc Jd 2h 5s 9c"), JB, 5)
    HoldAdvice(hold=(0, 1), ev=Fraction(8305, 1081))
    """
    counts, to_sorted, totals = _hold_totals(_hand_ids(hand), _pay_vector(paytable, coins))
    scaled = [t * f for t, f in zip(totals, _FACTOR_PY, strict=True)]
    top = max(scaled)
    tied = [mask for mask, s in enumerate(to_sorted) if scaled[s] == top]
    best_mask = tied[0]
    if len(tied) > 1:
        # Larger key wins: more cards held, then the better outcome profile from the
        # royal flush down, then the lower bitmask (negated).
        sorted_masks = [to_sorted[m] for m in tied]
        profiles = (_MOEBIUS[sorted_masks] @ counts).astype(np.int64)[:, ::-1]
        keys = [
            (_POP[s], *(profile * _FACTOR_PY[s]).tolist(), -mask)
            for mask, s, profile in zip(tied, sorted_masks, profiles, strict=True)
        ]
        best_mask = tied[keys.index(max(keys))]
    s = to_sorted[best_mask]
    return HoldAdvice(_POSITIONS[best_mask], Fraction(totals[s], WAYS[s]))


# -- batch interface for the maths -----------------------------------------------------


def final_counts_batch(cards: Columns) -> I32:
    """Counts of final hands of each rank, for every hold of many dealt hands at once.

    ``cards`` are five equal-length arrays: the card ids of each hand in ascending
    order (``cards[j][i]`` is the ``j``-th smallest card of hand ``i``). Returns shape
    ``(32, n, 10)``: hold bitmask (bit ``j`` = the ``j``-th smallest card), hand, rank.
    """
    t = _tables()
    n = len(cards[0])
    colex: list[I32] = [np.zeros(n, dtype=np.int32)] * HOLDS
    final = np.empty((HOLDS, n, N_RANKS), dtype=np.int32)
    final[0] = t.counts[0]
    for mask in range(1, HOLDS):
        high, size = _HIGH[mask], _POP[mask]
        colex[mask] = colex[mask ^ (1 << high)] + t.binom[size][cards[high]]
        if size < 5:
            final[mask] = t.counts[t.offsets[size] + colex[mask]]
        else:
            final[mask] = t.counts[t.onehot + t.codes5[colex[mask]].astype(np.int32)]
    _moebius(final)
    return final


def scale_counts(final: I32) -> I32:
    """Final-hand counts of every hold times ``SCALE // WAYS[hold]``: for each hold the
    probabilities of the ten ranks times :data:`SCALE`, as exact integers."""
    scaled: I32 = final * _FACTOR[:, None, None]
    return scaled


def choose_batch(scaled: I32, ev: F64) -> npt.NDArray[np.intp]:
    """Per hand, the bitmask of the max-EV hold with the module's tie-break.

    ``scaled`` is from :func:`scale_counts` ``(32, n, 10)``; ``ev`` is ``(32, n)``, any
    quantity proportional to the EV that is exact (integers below 2**53 in float64).
    The last tie-break is the lowest bitmask over sorted cards rather than positions; it
    only separates holds with identical outcome distributions.
    """
    cand = ev == ev.max(axis=0)
    best: npt.NDArray[np.intp] = _first_true(cand)
    tied = np.flatnonzero(cand.sum(axis=0) > 1)
    if tied.size:
        sub = cand[:, tied]
        keys: list[npt.NDArray[np.int32]] = [np.broadcast_to(_POP_ARRAY[:, None], sub.shape)]
        keys += [scaled[:, tied, r] for r in range(N_RANKS - 1, -1, -1)]
        for key in keys:
            masked = np.where(sub, key, -1)
            sub &= masked == masked.max(axis=0)
        best[tied] = _first_true(sub)
    return best


def _first_true(cand: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """Per column, the first row that is true (a min-reduce: faster than argmax along
    the first axis)."""
    first: npt.NDArray[np.intp] = np.where(cand, _MASK_COLUMN, HOLDS).min(axis=0)
    return first


def rank_codes(cards: Columns) -> I8:
    """Vectorised :func:`games.poker.rank_code` over five columns of sorted card ids.

    Each hand is reduced to eight feature bits (which neighbours share a rank, flush,
    five in a row, ten-high start, pair of jacks or better), looked up in a 256-entry
    table built from the same rules as :func:`games.poker.rank_code`.
    """
    c0, c1, c2, c3, c4 = (np.asarray(c, dtype=np.uint8) for c in cards)
    r0, r1, r2, r3, r4 = (c >> 2 for c in (c0, c1, c2, c3, c4))
    suit = c0 & 3
    flush = ((c1 & 3) == suit) & ((c2 & 3) == suit) & ((c3 & 3) == suit) & ((c4 & 3) == suit)
    run = (r4 - r0 == 4) | ((r4 == 12) & (r3 == 3))
    high = (r0 == r1) & (r0 >= 9) | (r1 == r2) & (r1 >= 9) | (r2 == r3) & (r2 >= 9)
    high |= (r3 == r4) & (r3 >= 9)
    key = (r0 == r1).view(np.uint8) | (r1 == r2).view(np.uint8) << 1
    key |= (r2 == r3).view(np.uint8) << 2 | (r3 == r4).view(np.uint8) << 3
    key |= flush.view(np.uint8) << 4 | run.view(np.uint8) << 5
    key |= (r0 == 8).view(np.uint8) << 6 | high.view(np.uint8) << 7
    codes: I8 = _FEATURE_CODES[key]
    return codes


def _feature_code(key: int) -> int:
    e0, e1, e2, e3, flush, run, ten_start, high_pair = ((key >> b) & 1 for b in range(8))
    pairs = e0 + e1 + e2 + e3
    if pairs == 0:
        if run and flush:
            return 9 if ten_start else 8
        return 5 if flush else 4 if run else 0
    if pairs == 1:
        return 1 if high_pair else 0
    if pairs == 2:
        return 3 if (e0 and e1) or (e1 and e2) or (e2 and e3) else 2
    return 7 if (e0 and e1 and e2) or (e1 and e2 and e3) else 6


_FEATURE_CODES: Final = np.array([_feature_code(k) for k in range(256)], dtype=np.int8)


def colex_columns(n: int, k: int) -> list[I8]:
    """All ``k``-subsets of ``0..n-1`` in colex order, as ``k`` columns (ascending in
    each row). Row ``sum_j C(c_j, j)`` holds ``c_1 < ... < c_k`` (combinatorial number
    system), which is how the tables are indexed."""
    columns: list[I8] = []
    for j in range(1, k + 1):
        tops = range(j - 1, n)
        columns = [np.concatenate([col[: comb(t, j - 1)] for t in tops]) for col in columns]
        sizes = [comb(t, j - 1) for t in tops]
        columns.append(np.repeat(np.arange(j - 1, n, dtype=np.int8), sizes))
    return columns


# -- tables ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tables:
    binom: tuple[I32, ...]  # binom[k][c] = C(c, k), k = 0..5, c = 0..51
    binom_py: tuple[tuple[int, ...], ...]  # binom_py[c][k], for the one-hand path
    offsets: tuple[int, ...]  # first row in ``counts`` of the sets of size 0..4
    counts: I32  # sets of size 0..4 in colex order, then 10 one-hot rows
    counts_f64: F64  # the same as float64 (exact), for the one-hand matrix products
    onehot: int
    codes5: I8  # rank code of every five-card hand, colex order
    codes5_py: bytes


@cache
def _tables() -> _Tables:
    binom = tuple(np.array([comb(c, k) for c in range(52)], dtype=np.int32) for k in range(6))
    hands = colex_columns(52, 5)
    codes5 = rank_codes(hands)
    levels = _counts_by_subset(hands, codes5, binom)
    offsets = [0]
    for level in levels:
        offsets.append(offsets[-1] + level.shape[0])
    counts = np.vstack([*levels, np.eye(N_RANKS, dtype=np.int32)])
    binom_py = tuple(tuple(comb(c, k) for k in range(6)) for c in range(52))
    return _Tables(
        binom,
        binom_py,
        tuple(offsets[:5]),
        counts,
        counts.astype(np.float64),
        offsets[5],
        codes5,
        codes5.tobytes(),
    )


def _counts_by_subset(hands: Sequence[I8], codes: I8, binom: tuple[I32, ...]) -> list[I32]:
    """For ``k`` = 0..4, per ``k``-card set (colex order), the ranks of the five-card
    hands containing it: one scatter of every paying hand into each of its subsets.

    Only the ~21% of hands that pay are scattered; the "nothing" column is what is left
    of the C(52 - k, 5 - k) hands holding each set.
    """
    paying = np.flatnonzero(codes)
    columns = [col[paying] for col in hands]
    base = codes[paying].astype(np.int32)
    # term[pos, j]: the colex term of the card at ``pos`` when it is the j-th of a subset.
    term = {
        (pos, j): binom[j + 1][columns[pos]] * N_RANKS for pos in range(5) for j in range(pos + 1)
    }
    levels = []
    for k in range(5):
        keys = []
        for positions in combinations(range(5), k):
            key = base.copy()
            for j, pos in enumerate(positions):
                key += term[pos, j]
            keys.append(key)
        counts = np.bincount(np.concatenate(keys), minlength=comb(52, k) * N_RANKS)
        counts = counts.reshape(-1, N_RANKS)
        counts[:, 0] = comb(52 - k, 5 - k) - counts[:, 1:].sum(axis=1)
        levels.append(counts.astype(np.int32))
    return levels


# -- helpers ---------------------------------------------------------------------------


def _bits(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(5) if mask >> i & 1)


_POSITIONS: Final = tuple(_bits(m) for m in range(HOLDS))
_HIGH_BIT: Final = tuple(1 << h if h >= 0 else 0 for h in _HIGH)
_FACTOR_PY: Final = tuple(SCALE // w for w in WAYS)
_MOEBIUS_PAIRS: Final = tuple(
    (m, m | bit) for bit in (1, 2, 4, 8, 16) for m in range(HOLDS) if not m & bit
)
"""The superset Moebius transform as in-place steps ``f[low] -= f[high]``, bit by bit."""
_MOEBIUS: Final = np.array(
    [[(-1) ** _POP[s ^ h] if s & h == h else 0 for s in range(HOLDS)] for h in range(HOLDS)],
    dtype=np.float64,
)
"""The same transform as a matrix: ``final = _MOEBIUS @ count`` (exact in float64)."""


def _moebius(final: npt.NDArray[np.int32] | npt.NDArray[np.int64]) -> None:
    """In place along the first axis (32 holds): ``f(H) <- sum over S >= H of
    (-1)^|S - H| f(S)``, i.e. inclusion-exclusion over the discarded cards."""
    view = final.reshape(2, 2, 2, 2, 2, *final.shape[1:])
    for axis in range(5):
        low: tuple[slice | int, ...] = (*(slice(None),) * axis, 0)
        high: tuple[slice | int, ...] = (*(slice(None),) * axis, 1)
        view[low] -= view[high]


def _hand_ids(hand: Sequence[Card]) -> tuple[int, int, int, int, int]:
    if len(hand) != 5:
        raise InvalidHand(f"a hand is exactly 5 cards, got {len(hand)}")
    a, b, c, d, e = (card.id for card in hand)
    if len({a, b, c, d, e}) != 5:
        raise InvalidHand(f"a hand has 5 distinct cards, got {' '.join(map(str, hand))}")
    return a, b, c, d, e


@cache
def _pay_vector(paytable: Paytable, coins: int) -> F64:
    column = paytable.column(coins)
    return np.array([column[r] for r in HAND_RANKS], dtype=np.float64)


@cache
def _mask_map(order: tuple[int, ...]) -> tuple[int, ...]:
    """``order[j]`` is the position of the ``j``-th smallest card; maps a bitmask of
    positions to the bitmask over cards in ascending order."""
    rank_of = [0] * 5
    for j, pos in enumerate(order):
        rank_of[pos] = j
    return tuple(sum(1 << rank_of[p] for p in _POSITIONS[m]) for m in range(HOLDS))


def _hold_totals(
    ids: tuple[int, int, int, int, int], pays: F64
) -> tuple[F64, tuple[int, ...], list[int]]:
    """The one-hand path, plain Python around one gather: the 32 rows ``count(S)`` for
    the subsets of the hand (by sorted-card bitmask), the position-to-sorted bitmask
    map, and per hold the total paid over all its draws (EV times ``WAYS``)."""
    t = _tables()
    order = tuple(sorted(range(5), key=ids.__getitem__))
    cards = [ids[p] for p in order]
    colex = [0] * HOLDS
    rows = [0] * HOLDS
    binom = t.binom_py
    offsets = t.offsets
    for mask in range(1, HOLDS - 1):
        size = _POP[mask]
        colex[mask] = value = colex[mask ^ _HIGH_BIT[mask]] + binom[cards[_HIGH[mask]]][size]
        rows[mask] = offsets[size] + value
    full = colex[HOLDS - 1 ^ 16] + binom[cards[4]][5]
    rows[HOLDS - 1] = t.onehot + t.codes5_py[full]
    counts = t.counts_f64.take(rows, axis=0)
    totals = [int(v) for v in (counts @ pays).tolist()]
    for low, high in _MOEBIUS_PAIRS:
        totals[low] -= totals[high]
    return counts, _mask_map(order), totals
