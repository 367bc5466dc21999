"""Double-up maths: the step is a fair bet; exact probabilities agree with the engine."""

from __future__ import annotations

import hashlib
from collections import Counter
from fractions import Fraction

from games.video_poker import double_up_math as m
from games.video_poker.engine import double_deck


def test_a_step_wins_eight_in_seventeen_pushes_one_in_seventeen() -> None:
    assert m.step_probabilities() == {
        "win": Fraction(8, 17),
        "push": Fraction(1, 17),
        "lose": Fraction(8, 17),
    }


def test_double_up_is_a_fair_bet_so_it_never_changes_the_rtp() -> None:
    assert m.step_return() == 1
    assert m.step_variance() == Fraction(16, 17)


def test_re_doubling_every_push_resolves_half_and_half() -> None:
    assert m.resolved_probabilities() == {"win": Fraction(1, 2), "lose": Fraction(1, 2)}
    assert m.expected_picks_to_resolve() == Fraction(17, 16)


def test_half_double_returns_the_win_on_average_even_for_odd_amounts() -> None:
    for win in (1, 2, 7, 1_001, 100_000):
        assert m.half_double_return(win) == win


def test_the_engines_double_up_decks_follow_the_exact_probabilities() -> None:
    # The production deck of each step, picking each of the four face-down cards:
    # a chi-square goodness of fit against 8/17, 1/17, 8/17 (2 degrees of freedom;
    # 13.8 is the 0.1 % critical value).
    observed: Counter[str] = Counter()
    for i in range(5_000):
        seed = hashlib.sha256(b"double-up-fit" + i.to_bytes(4, "big")).digest()
        deck = double_deck(seed, i % 3)
        dealer, face_down = deck[0], deck[1:5]
        for card in face_down:
            if card.rank > dealer.rank:
                observed["win"] += 1
            elif card.rank == dealer.rank:
                observed["push"] += 1
            else:
                observed["lose"] += 1
    total = sum(observed.values())
    chi2 = sum(
        (observed[k] - float(p) * total) ** 2 / (float(p) * total)
        for k, p in m.step_probabilities().items()
    )
    assert chi2 < 13.8, (observed, chi2)
