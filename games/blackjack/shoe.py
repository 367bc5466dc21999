"""The Infinite Blackjack shoe: 8 x 52 cards shuffled once from the shoe's seed, a cut card.

A :class:`Shoe` is a plain sequence of cards with a cut index; the round takes it as an
argument (never stores it), so a round state holds only the cards already shown. The
production shoe comes from :func:`shoe_from_seed`:

- cards: ``RandomStream(seed, "blackjack/shoe").shuffled(decks x full_deck())``
  (Fisher-Yates, top of the list down; decks concatenated in deck order, id order inside);
- cut index: ``lo + RandomStream(seed, "blackjack/cut").randbelow(hi - lo + 1)`` with
  ``(lo, hi) = rules.cut_range(len(cards))``, i.e. a penetration uniform between 75 % and
  85 % by default. seed 002: the game goes on "fino a quando non viene distribuita la carta
  di taglio"; the round that takes card ``cut_index`` finishes, then the shoe is done.
  No burn card (seed 002 names none).

Tests and the ledger may build a :class:`Shoe` from any cards (``Shoe.of("Ah Kd ...")``)
to deal a chosen situation.

>>> from games.blackjack.rules import DEFAULT_RULES
>>> shoe = shoe_from_seed(DEFAULT_RULES, bytes(32))
>>> len(shoe), 312 <= shoe.cut_index <= 353
(416, True)
>>> shoe == shoe_from_seed(DEFAULT_RULES, bytes(32))
True
>>> str(Shoe.of("Ah Kd 9c")[1])
'Kd'
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, overload

from games.blackjack.rules import Rules
from games.cards import Card, full_deck, parse_cards
from games.errors import InvalidRules
from games.rng import RandomStream

__all__ = ["CUT_LABEL", "SHOE_LABEL", "Shoe", "shoe_from_seed"]

SHOE_LABEL: Final = "blackjack/shoe"
CUT_LABEL: Final = "blackjack/cut"


@dataclass(frozen=True, slots=True)
class Shoe(Sequence[Card]):
    """Cards in dealing order and the index of the first card behind the cut card."""

    cards: tuple[Card, ...]
    cut_index: int

    def __post_init__(self) -> None:
        if not all(isinstance(c, Card) for c in self.cards):
            raise InvalidRules("a shoe holds Card values only")
        if isinstance(self.cut_index, bool) or not isinstance(self.cut_index, int):
            raise InvalidRules(f"cut index must be an int, got {self.cut_index!r}")
        if not 0 <= self.cut_index <= len(self.cards):
            raise InvalidRules(f"cut index {self.cut_index} is outside 0..{len(self.cards)}")

    @classmethod
    def of(cls, cards: str | Sequence[Card], cut_index: int | None = None) -> Shoe:
        """A shoe of the given cards (text like ``"Ah Kd 9c"`` or Card values); the cut
        card defaults to the end (never comes out)."""
        parsed = parse_cards(cards) if isinstance(cards, str) else tuple(cards)
        return cls(parsed, len(parsed) if cut_index is None else cut_index)

    def __len__(self) -> int:
        return len(self.cards)

    @overload
    def __getitem__(self, index: int) -> Card: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Card]: ...
    def __getitem__(self, index: int | slice) -> Card | Sequence[Card]:
        return self.cards[index]

    def __iter__(self) -> Iterator[Card]:
        return iter(self.cards)


def shoe_from_seed(rules: Rules, seed: bytes) -> Shoe:
    """The production shoe of ``seed``: every card of every round of this shoe."""
    cards = RandomStream(seed, SHOE_LABEL).shuffled(full_deck() * rules.decks)
    lo, hi = rules.cut_range(len(cards))
    cut = lo + RandomStream(seed, CUT_LABEL).randbelow(hi - lo + 1)
    return Shoe(tuple(cards), cut)
