"""The engine and the published cash-out table (games.blackjack.cashout): a round opened
without a table uses ``rules.cashout_table_id``; amounts are the offer, rounded down."""

from __future__ import annotations

import pytest

from games.blackjack.cashout import CASHOUT_TABLES
from games.blackjack.round import deal, open_round, place_bets
from games.blackjack.rules import DEFAULT_RULES, Rules
from games.blackjack.seat import decide, options
from games.blackjack.shoe import Shoe
from games.errors import InvalidRules


def test_a_round_uses_the_cash_out_table_its_rules_name() -> None:
    shared = open_round(DEFAULT_RULES, 0)
    assert shared.cashout is CASHOUT_TABLES[DEFAULT_RULES.cashout_table_id]


def test_the_cash_out_amount_is_the_published_offer_rounded_down() -> None:
    shoe = Shoe.of("Tc 9h 6d 8s 5c")
    shared = open_round(DEFAULT_RULES, 0)
    shared, seats = deal(shared, [place_bets(shared, "a", 333)], shoe)
    offer = CASHOUT_TABLES["cashout-v1"].offer(16, False, 9)
    assert offer is not None and 40 <= offer <= 177
    (amount,) = [o.amount for o in options(shared, seats[0]) if o.kind.value == "cash-out"]
    assert amount == 333 * offer // 100
    assert decide(shared, seats[0], "cash-out").cashed_out == amount


def test_an_unknown_cash_out_table_is_refused() -> None:
    with pytest.raises(InvalidRules):
        open_round(Rules(cashout_table_id="no-such-table"), 0)
