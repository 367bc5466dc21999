"""Infinite Blackjack table rules (seed 002): one frozen :class:`Rules` value per table.

Rules are configuration, not state: the shoe size and cut card, the ten-up reading, the
payouts, the limits and the ids of the cash-out and side-bet tables. A round records
``rules_version`` and the table ids so replay uses the rules it was played under.

Readings of seed 002 this engine takes (each is also stated where it is applied):

- **Cut card.** Seed 002 only says the game goes on "fino a quando non viene distribuita la
  carta di taglio". Default: the cut card sits before card ``cut_index`` of the shoe
  (0-based), drawn uniformly from the shoe's own stream so that the penetration lies
  between 75 % and 85 % (``cut_index`` in ``[ceil(0.75 n), floor(0.85 n)]``, 312..353 for
  416 cards). The round that takes card ``cut_index`` finishes; then the shoe is done. No
  burn card (seed 002 names none).
- **Ten up** (:class:`TenUpReading`): with a ten-value up card there is no peek; a dealer
  blackjack found at the end takes every stake the player put out, doubles and splits
  included (``all-bets``, the default: the European no-hole-card convention, and the
  reading whose exact RTP, 99.4561 %, is nearest seed 002's 99.47 %; see docs/games/blackjack.md),
  or the original bet only (``original-only``, 99.5483 %).
- **Double** on any two initial cards whose total is not 21 (seed 002: "Se il valore della
  tua mano iniziale è diverso da 21, puoi decidere di raddoppiare"; "Raddoppia con due
  carte iniziali qualsiasi"), *hard 17 or more included*: the hard-17 rule forbids asking
  for a card ("chiedere una carta", the CARTA button), and doubling is a separate decision
  that seed 002 grants on any two initial cards. ``double_on_hard_17`` turns it off.
- **Rounding.** Every payout is rounded DOWN to the minor unit (3:2 on an odd bet, cash-out
  amounts); the insurance stake is ``main // 2``.

>>> DEFAULT_RULES.cut_range(416)
(312, 353)
>>> DEFAULT_RULES.blackjack_win(25)
37
>>> DEFAULT_RULES.insurance_stake(25)
12
>>> DEFAULT_RULES.side_paytable(SideBet.PERFECT_PAIRS).id
'perfect-pairs-25-12-6'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from games.blackjack.paytables import PAYTABLES, SideBet, SidePaytable
from games.errors import GameRuleError, InvalidRules, require_positive_amount

__all__ = [
    "DECK_CARDS",
    "DEFAULT_CASHOUT_TABLE_ID",
    "DEFAULT_RULES",
    "RULES_VERSION",
    "Rules",
    "TenUpReading",
]

RULES_VERSION: Final = "infinite-blackjack/1"
DECK_CARDS: Final = 52
DEFAULT_CASHOUT_TABLE_ID: Final = "cashout-v1"
"""The id under which :mod:`games.blackjack.cashout` publishes the default offer table."""


class TenUpReading(StrEnum):
    """What a dealer blackjack under a ten-value up card takes (no peek; seed 002 does not
    say). Wire format."""

    ORIGINAL_ONLY = "original-only"
    """Only the original bet of each hand is lost; doubles and split stakes come back."""
    ALL_BETS = "all-bets"
    """Every stake is lost, doubles and splits included ("lose all", as in European
    no-hole-card games)."""


@dataclass(frozen=True, slots=True)
class Rules:
    """One Infinite Blackjack table. Amounts are int minor units; ratios are ints."""

    decks: int = 8
    """seed 002: "Si gioca con otto mazzi"."""
    penetration_min_permille: int = 750
    penetration_max_permille: int = 850
    ten_up: TenUpReading = TenUpReading.ALL_BETS
    blackjack_pays: tuple[int, int] = (3, 2)
    """seed 002: "Il Blackjack paga 3:2" (numerator, denominator; rounded down)."""
    insurance_pays: int = 2
    """seed 002: "L'assicurazione paga 2:1"."""
    charlie_cards: int = 6
    """seed 002: Six Card Charlie, six cards totalling 21 or less win at once."""
    double_on_hard_17: bool = True
    """Whether a double is allowed on a hard two-card total of 17..20 (see module doc)."""
    min_bet: int = 100
    max_bet: int = 500_000
    side_min_bet: int = 100
    side_max_bet: int = 50_000
    cashout_table_id: str = DEFAULT_CASHOUT_TABLE_ID
    perfect_pairs_paytable: str = "perfect-pairs-25-12-6"
    twenty_one_plus_three_paytable: str = "21+3-100-40-30-10-5"
    hot_three_paytable: str = "hot-3-100-20-4-2-1"
    bust_it_paytable: str = "bust-it-1-2-9-50-100-250"
    rules_version: str = RULES_VERSION

    def __post_init__(self) -> None:
        try:
            for what in ("decks", "min_bet", "max_bet", "side_min_bet", "side_max_bet"):
                require_positive_amount(what, getattr(self, what))
            require_positive_amount("insurance_pays", self.insurance_pays)
            require_positive_amount("charlie_cards", self.charlie_cards)
            num, den = self.blackjack_pays
            require_positive_amount("blackjack_pays numerator", num)
            require_positive_amount("blackjack_pays denominator", den)
        except (GameRuleError, TypeError, ValueError) as exc:
            raise InvalidRules(str(exc)) from exc
        if self.charlie_cards != 6:
            raise InvalidRules("this engine plays Six Card Charlie (seed 002): charlie_cards=6")
        if self.min_bet > self.max_bet or self.side_min_bet > self.side_max_bet:
            raise InvalidRules("a minimum bet is above its maximum")
        lo, hi = self.penetration_min_permille, self.penetration_max_permille
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 < lo <= hi < 1000):
            raise InvalidRules(f"penetration must satisfy 0 < min <= max < 1000, got {lo}, {hi}")
        if not isinstance(self.ten_up, TenUpReading):
            raise InvalidRules(f"unknown ten-up reading {self.ten_up!r}")
        if not self.cashout_table_id:
            raise InvalidRules("a table needs a cash-out table id")
        for bet in SideBet:
            pid = self._side_paytable_id(bet)
            table = PAYTABLES.get(pid)
            if table is None or table.bet is not bet:
                raise InvalidRules(f"unknown {bet.value} paytable {pid!r}")
        if self.rules_version != RULES_VERSION:
            raise InvalidRules(
                f"rules version {self.rules_version!r} is not implemented"
                f" (this engine plays {RULES_VERSION!r})"
            )

    @property
    def shoe_cards(self) -> int:
        return self.decks * DECK_CARDS

    def cut_range(self, cards: int) -> tuple[int, int]:
        """The smallest and largest cut index for a shoe of ``cards`` cards (inclusive)."""
        lo = -(-cards * self.penetration_min_permille // 1000)
        hi = cards * self.penetration_max_permille // 1000
        return lo, max(lo, hi)

    def blackjack_win(self, bet: int) -> int:
        """Winnings (stake excluded) of a blackjack on ``bet``: 3:2 rounded down."""
        num, den = self.blackjack_pays
        return bet * num // den

    def insurance_stake(self, bet: int) -> int:
        """seed 002: insurance costs half the main bet ("pari alla metà"); rounded down."""
        return bet // 2

    def _side_paytable_id(self, bet: SideBet) -> str:
        if bet is SideBet.PERFECT_PAIRS:
            return self.perfect_pairs_paytable
        if bet is SideBet.TWENTY_ONE_PLUS_THREE:
            return self.twenty_one_plus_three_paytable
        if bet is SideBet.HOT_THREE:
            return self.hot_three_paytable
        return self.bust_it_paytable

    def side_paytable(self, bet: SideBet) -> SidePaytable:
        """The paytable this table uses for side bet ``bet``."""
        return PAYTABLES[self._side_paytable_id(bet)]


DEFAULT_RULES: Final = Rules()
"""Seed 002's table with our stated defaults (limits are per table)."""
