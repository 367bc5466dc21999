"""Card, Rank and Suit values with a documented integer id, parsing and glyphs."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum


class Rank(IntEnum):
    """Card ranks; the ace is high (14). Seed 003 and seed 004 both rank 2..A."""

    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13
    ACE = 14

    @property
    def symbol(self) -> str:
        return _RANK_SYMBOLS[self.value - 2]


class Suit(StrEnum):
    """Suits, in id order: clubs, diamonds, hearts, spades (wire format: one letter)."""

    CLUBS = "c"
    DIAMONDS = "d"
    HEARTS = "h"
    SPADES = "s"

    @property
    def ordinal(self) -> int:
        """0..3 in id order (clubs, diamonds, hearts, spades)."""
        return _SUITS.index(self)

    @property
    def glyph(self) -> str:
        return _SUIT_GLYPHS[self.ordinal]


_RANK_SYMBOLS = "23456789TJQKA"
_SUITS = (Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS, Suit.SPADES)
_SUIT_GLYPHS = "♣♦♥♠"


class CardParseError(ValueError):
    """Raised when a text is not a card such as 'Ah' or 'Td'."""


@dataclass(frozen=True, order=True, slots=True)
class Card:
    """One playing card.

    The integer id is ``(rank - 2) * 4 + suit index`` (clubs 0, diamonds 1, hearts 2,
    spades 3), so ids 0..51 run 2c, 2d, 2h, 2s, 3c, ... As.

    >>> Card.parse("Ah").id
    50
    >>> str(Card.from_id(0))
    '2c'
    >>> Card.parse("Td").glyph
    'T♦'
    """

    rank: Rank
    suit: Suit

    @property
    def id(self) -> int:
        return (self.rank - 2) * 4 + self.suit.ordinal

    @classmethod
    def from_id(cls, card_id: int) -> Card:
        if not 0 <= card_id < 52:
            raise CardParseError(f"card id must be 0..51, got {card_id}")
        return _DECK[card_id]

    @classmethod
    def parse(cls, text: str) -> Card:
        t = text.strip()
        if t[:2] == "10":
            t = "T" + t[2:]
        if len(t) != 2 or t[0].upper() not in _RANK_SYMBOLS or t[1].lower() not in "cdhs":
            raise CardParseError(f"not a card: {text!r} (expected e.g. 'Ah', 'Td', '2c')")
        return cls(Rank(_RANK_SYMBOLS.index(t[0].upper()) + 2), Suit(t[1].lower()))

    @property
    def glyph(self) -> str:
        return self.rank.symbol + self.suit.glyph

    def __str__(self) -> str:
        return self.rank.symbol + self.suit.value

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"


_DECK: tuple[Card, ...] = tuple(Card(Rank(r), s) for r in range(2, 15) for s in _SUITS)


def full_deck() -> tuple[Card, ...]:
    """The 52 cards in id order."""
    return _DECK


def parse_cards(text: str) -> tuple[Card, ...]:
    """Parse space- or comma-separated cards: ``"Ah Kd 2c"``."""
    return tuple(Card.parse(t) for t in text.replace(",", " ").split())


def glyphs(cards: tuple[Card, ...] | list[Card]) -> str:
    return " ".join(c.glyph for c in cards)
