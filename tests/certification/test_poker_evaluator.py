"""Every one of the 2,598,960 five-card hands: category counts and a classification digest.

The digest is SHA-256 over the wire value of each hand's rank, one per line (``\\n``
after each), hands in ``itertools.combinations(full_deck(), 5)`` order. Its expected
value and how it was produced are in ``tests/fixtures/poker_evaluator_digest.json``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from games.cards import full_deck
from games.poker import HAND_RANKS, HandRank, evaluate
from games.video_poker.strategy import colex_columns, rank_codes

FIXTURE = Path(__file__).parents[1] / "fixtures" / "poker_evaluator_digest.json"

# The textbook counts of five-card poker hands, with "one pair" split at jacks:
# 1,098,240 one-pair hands, of which 4 ranks x 84,480 = 337,920 are jacks or better.
EXPECTED_COUNTS = {
    HandRank.ROYAL_FLUSH: 4,
    HandRank.STRAIGHT_FLUSH: 36,
    HandRank.FOUR_OF_A_KIND: 624,
    HandRank.FULL_HOUSE: 3_744,
    HandRank.FLUSH: 5_108,
    HandRank.STRAIGHT: 10_200,
    HandRank.THREE_OF_A_KIND: 54_912,
    HandRank.TWO_PAIR: 123_552,
    HandRank.JACKS_OR_BETTER: 337_920,
    HandRank.NOTHING: 2_598_960 - 536_100,
}

pytestmark = pytest.mark.slow


def test_every_hand_classified_with_the_textbook_counts_and_pinned_digest() -> None:
    digest = hashlib.sha256()
    counts: Counter[HandRank] = Counter()
    for hand in combinations(full_deck(), 5):
        rank = evaluate(hand)
        counts[rank] += 1
        digest.update(rank.value.encode() + b"\n")
    assert dict(counts) == EXPECTED_COUNTS
    assert sum(counts.values()) == 2_598_960
    expected = json.loads(FIXTURE.read_text())
    assert digest.hexdigest() == expected["sha256"]
    assert expected["counts"] == {r.value: n for r, n in EXPECTED_COUNTS.items()}


def test_vectorised_classifier_agrees_with_the_reference_on_every_hand() -> None:
    """The maths classify all hands with a feature-bit table; it must match evaluate()."""
    columns = colex_columns(52, 5)
    fast = rank_codes(columns)
    deck = full_deck()
    rows = zip(*(c.tolist() for c in columns), strict=True)
    reference = np.array([evaluate([deck[i] for i in ids]).order for ids in rows], dtype=np.int8)
    mismatches = np.flatnonzero(fast != reference)
    assert mismatches.size == 0, f"first mismatch at colex row {mismatches[:1]}"
    assert [int(n) for n in np.bincount(fast, minlength=10)] == [
        EXPECTED_COUNTS[r] for r in HAND_RANKS
    ]
