"""The shipped ``certified_figures.json`` is exactly what Infinite Blackjack's maths derive.

A change to the maths or to a paytable without regenerating the file (``python -m
games.blackjack.certified --write``) fails here, as ``cashout_tables.json`` does in
``test_blackjack_cashout.py``.
"""

from __future__ import annotations

from importlib import resources

import pytest

from games.audit import TheoryRow
from games.blackjack import certified
from games.blackjack.cashout_math import published_table
from games.blackjack.certify import certification_rows

pytestmark = pytest.mark.slow


def test_shipped_figures_file_is_exactly_what_the_maths_derive() -> None:
    text = resources.files("games.blackjack").joinpath(certified.DATA_FILE).read_text("utf-8")
    derived = certified.regenerate()
    assert certified.shipped() == derived
    assert text == certified.document(derived)


def test_rows_read_from_the_file_equal_the_computed_rows_field_for_field() -> None:
    computed = tuple(
        TheoryRow(
            r.game,
            r.variant,
            r.paytable_id,
            r.play,
            r.coins,
            r.rtp,
            r.published,
            r.source,
            r.agreement,
            r.max_paid_per_bet,
            r.hit_frequency,
            r.exact,
        )
        for r in certification_rows()
    )
    assert len(computed) == 14 and certified.certified_rows() == computed


def test_the_catalogue_offers_the_published_cash_out_table() -> None:
    table = published_table()
    offers = certified.catalogue_entry()["cashout_table"]
    assert offers["id"] == table.id
    flat = {
        (int(total), kind == "soft", int(up)): value
        for kind, totals in offers["offers"].items()
        for total, ups in totals.items()
        for up, value in ups.items()
    }
    assert flat == dict(table.offers)
