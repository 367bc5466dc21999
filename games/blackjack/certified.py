"""Infinite Blackjack's part of the certified-RTP table and of the game catalogue.

The rows are :func:`games.blackjack.certify.certification_rows` (seed 002, fresh 8-deck
shoe), field for field. Computing them takes seconds, so they are computed once per
process on first use (never at import). Blackjack is a table game with no round adapter
yet (its live table is not on the ledger), so the registry lists it among the games with
certified figures only.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from games.audit import Certified, TheoryRow
from games.blackjack.cashout_math import published_table
from games.blackjack.certify import certification_rows
from games.percent import as_percent

GAME = "blackjack"
_DIFFERS = (
    "seed 002 publishes 99.47 % for the main game; it is reproduced only under"
    " ten-up all-bets if hitting hard 17+ were allowed (the row 'optimal, hit hard 17+'), which"
    " seed 002 forbids"
)
_OPTION = "original-only is a table option, not the certified default: " + _DIFFERS
NOTES = (
    "Blackjack (seed 002, fresh 8-deck shoe): main game per unit of original bet, ten-up"
    " all-bets is the engine default (certified), original-only a table option;",
    "  main-game figures are doubles from the exact recursion (rtp_exact null in --json);"
    " side bets per unit staked; max paid 4 = a doubled or split hand won.",
    f"  Known difference: {_DIFFERS}.",
)


@cache
def certified_rows() -> tuple[TheoryRow, ...]:
    return tuple(
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


CERTIFIED = Certified(
    certified_rows,
    NOTES,
    known_differences={
        ("main, ten-up all-bets", "optimal"): _DIFFERS,
        ("main, ten-up original-only", "optimal"): _OPTION,
    },
)


def catalogue_entry() -> dict[str, Any]:
    """``GET /v1/games`` ``other_games["blackjack"]``: every certified figure, and the
    cash-out offer table, as the certification computes them."""
    table = published_table()
    return {
        "id": "infinite",
        "on_the_ledger": False,
        "rtp": [
            {
                "bet": r.paytable_id,
                "play": r.play,
                "percent": str(as_percent(r.rtp)),
                "exact": f"{r.rtp.numerator}/{r.rtp.denominator}" if r.exact else None,
                "published": r.published,
                "agreement": r.agreement,
            }
            for r in certified_rows()
        ],
        "cashout_table": {"id": table.id, "offers": _offers(table.offers)},
    }


def _offers(offers: Mapping[tuple[int, bool, int], int]) -> dict[str, dict[str, dict[str, int]]]:
    """In hundredths of the main bet, by hard/soft, total, then the dealer's up card (11 =
    ace): the layout of the published table (``cashout_tables.json``)."""
    out: dict[str, dict[str, dict[str, int]]] = {"hard": {}, "soft": {}}
    for (total, soft, up), value in sorted(offers.items()):
        out["soft" if soft else "hard"].setdefault(str(total), {})[str(up)] = value
    return out
