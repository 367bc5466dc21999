"""Cash-out ("Incassare", seed 002): the published offer table is the maths' own, stays in
0.40-1.77, reproduces the published always-cash-out return, and cannot be used to beat
the game."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from importlib import resources

import pytest

from games.blackjack.cashout import (
    CASHOUT_TABLES,
    MAX_OFFER,
    MIN_OFFER,
    CashoutQueryError,
    cashout_table,
    load_tables,
)
from games.blackjack.cashout_math import (
    TABLE_ID,
    always_cashout_return,
    selective_return,
    table_document,
)
from games.blackjack.certify import as_percent
from games.blackjack.math import main_game
from games.blackjack.player_ev import hand_space
from games.errors import InvalidRules

pytestmark = pytest.mark.slow
TABLE = CASHOUT_TABLES[TABLE_ID]


def test_published_table_file_is_exactly_what_the_maths_derive() -> None:
    published = resources.files("games.blackjack").joinpath("cashout_tables.json").read_text()
    assert table_document() == published
    assert load_tables(published)[TABLE_ID] == TABLE


def test_every_offer_lies_in_seed_002_range_and_the_range_is_reached_at_the_top() -> None:
    offers = TABLE.offers.values()
    assert all(MIN_OFFER <= o <= MAX_OFFER for o in offers)
    assert max(offers) == 177  # a 20 against an 8
    assert TABLE.offer(20, False, 8) == 177
    assert min(offers) == TABLE.offer(16, False, 10) == 42


def test_offers_exist_for_every_total_below_21_and_never_on_21() -> None:
    for up in range(2, 12):
        assert all(TABLE.offer(t, False, up) is not None for t in range(4, 21))
        assert all(TABLE.offer(t, True, up) is not None for t in range(12, 21))
        assert TABLE.offer(21, False, up) is None
        assert TABLE.offer(21, True, up) is None


def test_always_cashing_out_at_the_first_opportunity_returns_the_published_96_80() -> None:
    rtp = always_cashout_return(dict(TABLE.offers))
    assert as_percent(rtp, 2) == Decimal("96.80")


@pytest.mark.parametrize("all_bets", [True, False], ids=["all-bets", "original-only"])
def test_best_selective_cash_out_does_not_beat_optimal_play(all_bets: bool) -> None:
    sp = hand_space()
    optimal = main_game(all_bets, space=sp).rtp
    selective = selective_return(TABLE, all_bets, sp)
    assert selective <= optimal + 1e-12
    assert selective >= optimal - 1e-12  # ignoring the offers is always possible


def test_a_table_one_hundredth_more_generous_would_be_beatable() -> None:
    # The soundness check can fail: raise every offer by 0.01 (within 1.77) and best
    # selective use beats optimal play.
    doc = json.loads(table_document())
    for kind in ("hard", "soft"):
        for row in doc["tables"][0]["offers"][kind].values():
            for up in row:
                row[up] = min(row[up] + 1, MAX_OFFER)
    generous = load_tables(json.dumps(doc))[TABLE_ID]
    sp = hand_space()
    assert selective_return(generous, True, sp) > main_game(True, space=sp).rtp + 1e-7


def test_amount_rounds_down_to_the_minor_unit() -> None:
    assert TABLE.amount(20, False, 8, 250) == 250 * 177 // 100  # 442.5 -> 442
    assert TABLE.amount(21, False, 8, 250) is None


@pytest.mark.parametrize(
    ("total", "soft", "up"), [(20, False, 1), (20, False, 12), (1, False, 5), (10, True, 5)]
)
def test_an_impossible_query_is_a_typed_error(total: int, soft: bool, up: int) -> None:
    with pytest.raises(CashoutQueryError):
        TABLE.offer(total, soft, up)


def test_unknown_table_id_is_refused() -> None:
    with pytest.raises(InvalidRules):
        cashout_table("no-such-table")
    assert cashout_table(TABLE_ID).margin == Fraction(61829, 62500)
