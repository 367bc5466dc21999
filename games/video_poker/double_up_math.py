"""Exact maths of the double-up (seed 000, "Raddoppio / Mezzo Raddoppio").

One step: a fresh 52-card deck; the dealer shows one card and deals four face down; the
player picks one. Only ranks count (ace high). Whichever face-down card is picked, it is a
uniformly random card of the 51 the dealer did not show, so the step is decided by an
ordered pair (dealer card, picked card) of distinct cards: 52 x 51 = 2,652 equally likely
pairs. Lower loses the stake, equal pushes (the stake comes back and the player decides
again), higher pays the stake doubled.

Result: win 8/17, push 1/17, lose 8/17; a step returns exactly its stake on average
(return 1, variance 16/17 per unit staked), so double-up never changes a paytable's RTP,
only its variance. With "push, decide again" and a player who re-doubles on every push,
a step resolves as win 1/2, lose 1/2 after 17/16 picks on average. A half double stakes
``floor(win / 2)`` and banks the rest, so its return is also exactly the win.

>>> step_probabilities()
{'win': Fraction(8, 17), 'push': Fraction(1, 17), 'lose': Fraction(8, 17)}
>>> step_return(), step_variance()
(Fraction(1, 1), Fraction(16, 17))
"""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations

from games.cards import full_deck

PAYS = {"win": 2, "push": 1, "lose": 0}
"""What one unit staked on a step returns, by result."""


def step_probabilities() -> dict[str, Fraction]:
    """Exact, by enumerating every (dealer card, picked card) pair."""
    counts = {"win": 0, "push": 0, "lose": 0}
    pairs = 0
    for dealer, picked in permutations(full_deck(), 2):
        pairs += 1
        if picked.rank > dealer.rank:
            counts["win"] += 1
        elif picked.rank == dealer.rank:
            counts["push"] += 1
        else:
            counts["lose"] += 1
    return {k: Fraction(v, pairs) for k, v in counts.items()}


def step_return() -> Fraction:
    """Expected amount returned per unit staked on one step (push returns the stake)."""
    return sum((p * PAYS[k] for k, p in step_probabilities().items()), Fraction(0))


def step_variance() -> Fraction:
    """Variance of the amount returned per unit staked on one step."""
    probs = step_probabilities()
    mean = step_return()
    return sum((p * (PAYS[k] - mean) ** 2 for k, p in probs.items()), Fraction(0))


def resolved_probabilities() -> dict[str, Fraction]:
    """Win/lose of a step when every push is re-doubled until it resolves."""
    probs = step_probabilities()
    decided = probs["win"] + probs["lose"]
    return {"win": probs["win"] / decided, "lose": probs["lose"] / decided}


def expected_picks_to_resolve() -> Fraction:
    """Mean number of picks until a step is decided when pushes are re-doubled."""
    return 1 / (1 - step_probabilities()["push"])


def half_double_return(win: int) -> Fraction:
    """Expected final amount of a half double on ``win`` minor units: the banked part
    plus the staked half's expected return (equals ``win``: the bet is fair)."""
    staked = win // 2
    return (win - staked) + staked * step_return()
