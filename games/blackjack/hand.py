"""Blackjack card values and hand totals (seed 002, "Regole del gioco"): one frozen Hand.

seed 002: cards 2..10 count their number, J/Q/K count 10, an ace counts 1 or 11,
"a seconda di quale valore sia maggiormente favorevole alla mano"; a hand is *soft* when
an ace counts 11. A blackjack is 21 with the first two cards only, never after a split
("Una mano da 21 derivante da una coppia divisa non viene considerata un Blackjack").

>>> from games.cards import parse_cards
>>> total_of(parse_cards("Ah 6c"))
(17, True)
>>> total_of(parse_cards("Ah 6c Kd"))
(17, False)
>>> Hand(parse_cards("As Kd"), stake=100).blackjack
True
>>> Hand(parse_cards("As Kd"), stake=100, split=True).blackjack
False
>>> value_of(parse_cards("Ah")[0]), value_of(parse_cards("Qs")[0])
(11, 10)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Final

from games.cards import Card, Rank

__all__ = ["CHARLIE_CARDS", "Hand", "hard_value", "make_hand", "total_of", "value_of"]

CHARLIE_CARDS: Final = 6
"""seed 002, "Six Card Charlie": six cards totalling 21 or less win at once."""

# Hard value by rank: the ace counts 1 here; `total_of` adds 10 when that does not bust.
_HARD: Final[dict[Rank, int]] = {r: min(int(r), 10) for r in Rank}
_HARD[Rank.ACE] = 1


def hard_value(card: Card) -> int:
    """The card's value with an ace counted 1 (2..10 otherwise)."""
    return _HARD[card.rank]


def value_of(card: Card) -> int:
    """The card's value as an up card: 2..10, 11 for an ace (the cash-out table's key)."""
    return 11 if card.rank is Rank.ACE else _HARD[card.rank]


def total_of(cards: Sequence[Card]) -> tuple[int, bool]:
    """The best total of ``cards`` and whether it is soft (an ace counted 11).

    seed 002: the ace takes the value more favourable to the hand, i.e. 11 unless that
    busts; at most one ace can count 11.
    """
    hard = 0
    ace = False
    for card in cards:
        v = _HARD[card.rank]
        hard += v
        if v == 1:
            ace = True
    if ace and hard <= 11:
        return hard + 10, True
    return hard, False


@dataclass(frozen=True, slots=True)
class Hand:
    """One player hand: its cards, its stake (doubled included) and how it came about."""

    cards: tuple[Card, ...]
    stake: int
    doubled: bool = False
    """seed 002: after a double the hand takes one card only."""
    split: bool = False
    """The hand is one of the two made by a split (no blackjack, no double, no cash-out)."""

    @property
    def total(self) -> int:
        return total_of(self.cards)[0]

    @property
    def soft(self) -> bool:
        return total_of(self.cards)[1]

    @property
    def blackjack(self) -> bool:
        return not self.split and len(self.cards) == 2 and self.total == 21

    @property
    def bust(self) -> bool:
        return self.total > 21

    @property
    def charlie(self) -> bool:
        """seed 002: six cards totalling 21 or less ("pari o inferiore a 21")."""
        return len(self.cards) >= CHARLIE_CARDS and self.total <= 21

    @property
    def split_aces(self) -> bool:
        """seed 002: "Ogni Asso Diviso riceve una sola carta"."""
        return self.split and self.cards[0].rank is Rank.ACE

    @property
    def finished(self) -> bool:
        """No more cards and no decision for this hand: bust, 21 (seed 002: no decision on
        21, soft 21 included), a charlie, a doubled hand, or a split ace with its card."""
        if len(self.cards) < 2:
            return False
        total = self.total
        return (
            total >= 21
            or len(self.cards) >= CHARLIE_CARDS
            or self.doubled
            or (self.split_aces and len(self.cards) == 2)
        )

    def with_card(self, card: Card) -> Hand:
        return make_hand((*self.cards, card), self.stake, self.doubled, self.split)


_new = object.__new__
_set_cards, _set_stake, _set_doubled, _set_split = (
    Hand.__dict__[f.name].__set__ for f in fields(Hand)
)


def make_hand(cards: tuple[Card, ...], stake: int, doubled: bool, split: bool) -> Hand:
    """``Hand(cards, stake, doubled, split)``, filling the slots directly: hands are built
    for every seat at every step, and the frozen ``__init__`` (one ``object.__setattr__``
    per field) costs several times more. Hand has no ``__post_init__``, so the value is
    the same."""
    out = _new(Hand)
    _set_cards(out, cards)
    _set_stake(out, stake)
    _set_doubled(out, doubled)
    _set_split(out, split)
    return out
