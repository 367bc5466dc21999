"""Infinite Blackjack's part of the certified-RTP table and of the game catalogue.

The rows are :func:`games.blackjack.certify.certification_rows` (seed 002, fresh 8-deck
shoe), field for field. Computing them takes seconds, so they ship as data, like the
cash-out offer table: ``certified_figures.json`` next to this module, read once per
process on first use (never at import; no maths at request time). :func:`regenerate`
derives the document from the maths; the certification test
``tests/certification/test_blackjack_certified_figures.py`` fails when the shipped file
no longer matches (regenerate with ``python -m games.blackjack.certified --write``).
Fractions are ``"numerator/denominator"`` strings so they stay exact (the main game's
figures are the exact rationals of the doubles the recursion gave). Blackjack is a table
game with no round adapter yet (its live table is not on the ledger), so the registry
lists it among the games with certified figures only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

from games.audit import Certified, TheoryRow
from games.blackjack.cashout import cashout_table
from games.blackjack.rules import DEFAULT_CASHOUT_TABLE_ID
from games.percent import as_percent

GAME = "blackjack"
DATA_FILE: Final = "certified_figures.json"
_ABOUT = (
    "Infinite Blackjack's certified figures (seed 002, fresh 8-deck shoe), derived by"
    " games.blackjack.certify.certification_rows; regenerate with"
    " python -m games.blackjack.certified --write"
)
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


def _fraction(text: str) -> Fraction:
    numerator, denominator = text.split("/")
    return Fraction(int(numerator), int(denominator))


def _text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _row(doc: Mapping[str, Any]) -> TheoryRow:
    hit = doc["hit_frequency"]
    return TheoryRow(
        str(doc["game"]),
        str(doc["variant"]),
        str(doc["paytable_id"]),
        str(doc["play"]),
        str(doc["coins"]),
        _fraction(doc["rtp"]),
        None if doc["published"] is None else str(doc["published"]),
        str(doc["source"]),
        str(doc["agreement"]),
        _fraction(doc["max_paid_per_bet"]),
        None if hit is None else _fraction(hit),
        bool(doc["exact"]),
    )


def regenerate() -> dict[str, Any]:
    """The document ``certified_figures.json`` holds, computed from the maths (seconds)."""
    from games.blackjack import certify  # the maths: only when regenerating

    return {
        "about": _ABOUT,
        "rows": [
            {
                "game": r.game,
                "variant": r.variant,
                "paytable_id": r.paytable_id,
                "play": r.play,
                "coins": r.coins,
                "rtp": _text(r.rtp),
                "exact": r.exact,
                "published": r.published,
                "source": r.source,
                "agreement": r.agreement,
                "max_paid_per_bet": _text(r.max_paid_per_bet),
                "hit_frequency": None if r.hit_frequency is None else _text(r.hit_frequency),
            }
            for r in certify.certification_rows()
        ],
    }


def document(doc: Mapping[str, Any]) -> str:
    """The file's text for ``doc`` (stable layout, so a regenerated file diffs cleanly)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def shipped() -> dict[str, Any]:
    """The shipped document, parsed."""
    text = resources.files("games.blackjack").joinpath(DATA_FILE).read_text("utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


@cache
def certified_rows() -> tuple[TheoryRow, ...]:
    """The rows of the shipped file, read once per process."""
    return tuple(_row(r) for r in shipped()["rows"])


CERTIFIED = Certified(
    certified_rows,
    NOTES,
    known_differences={
        ("main, ten-up all-bets", "optimal"): _DIFFERS,
        ("main, ten-up original-only", "optimal"): _OPTION,
    },
)


def catalogue_entry() -> dict[str, Any]:
    """``GET /v1/games`` ``other_games["blackjack"]``: every certified figure (the shipped
    file) and the cash-out offer table (``cashout_tables.json``)."""
    table = cashout_table(DEFAULT_CASHOUT_TABLE_ID)  # seed 002's table: cashout_math.TABLE_ID
    return {
        "id": "infinite",
        "on_the_ledger": True,  # live tables: GET /v1/tables (the routes add each table)
        "rtp": [
            {
                "bet": r.paytable_id,
                "play": r.play,
                "percent": str(as_percent(r.rtp)),
                "exact": _text(r.rtp) if r.exact else None,
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


def main(argv: Sequence[str] | None = None) -> int:
    """Print the regenerated document; with ``--write``, replace the shipped file."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ["--write"]):
        print("usage: python -m games.blackjack.certified [--write]", file=sys.stderr)
        return 2
    text = document(regenerate())
    if args:
        Path(__file__).with_name(DATA_FILE).write_text(text, encoding="utf-8", newline="\n")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
