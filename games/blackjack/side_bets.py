"""Side-bet classification (seed 002, "Puntate secondarie"): which outcome a deal makes.

Each function returns an outcome name of :data:`~games.blackjack.paytables.OUTCOMES`
(wire format) or ``None`` when the side bet loses. Readings of seed 002, one per bet:

- **Perfect Pairs** (the two player cards): a pair is the *same rank* ("due Regine, due
  Assi o due 3"), so J-Q is no pair even though both count 10. Same suit -> ``perfect``;
  different suits of the same colour (hearts/diamonds red, clubs/spades black) ->
  ``coloured``; different colours -> ``mixed``.
- **21+3** (the two player cards and the dealer's up card), best first: ``suited-trips``
  (same rank and same suit, "un tris identico"), ``straight-flush``, ``trips`` (same rank),
  ``straight``, ``flush``. Straights are three consecutive ranks; the ace plays low or high,
  so A-2-3 and Q-K-A are straights, and K-A-2 is not (no wrap-around).
- **Hot 3** (the same three cards): aces count 1 or 11 as in blackjack and the best total
  of 21 or less counts. 7-7-7 of any suits is ``777`` (100:1) and outranks ``suited-21``
  (21 of one suit, "Totale di 21 di un seme"), then ``21``, ``20``, ``19``.
- **Bust It** (the dealer's final hand): ``3`` .. ``7`` or ``8+``, the number of dealer
  cards when the dealer busts; no outcome when the dealer does not bust (a dealer blackjack
  at the peek included). The push on a player blackjack ("viene restituita (push) se il
  giocatore ottiene un Blackjack") is applied in settlement, not here.

>>> from games.cards import parse_cards
>>> perfect_pairs(*parse_cards("8h 8d")), perfect_pairs(*parse_cards("Jh Qh"))
('coloured', None)
>>> twenty_one_plus_three(*parse_cards("Qs Kh Ac")), twenty_one_plus_three(*parse_cards("Ks Ah 2c"))
('straight', None)
>>> hot_three(*parse_cards("7h 7c 7d")), hot_three(*parse_cards("Ad Ad 9d"))
('777', 'suited-21')
>>> bust_it(parse_cards("Td 6c Kh")), bust_it(parse_cards("Td 7c"))
('3', None)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from games.blackjack.hand import total_of
from games.cards import Card, Rank, Suit

__all__ = ["bust_it", "hot_three", "perfect_pairs", "twenty_one_plus_three"]

_RED: Final = frozenset({Suit.HEARTS, Suit.DIAMONDS})


def perfect_pairs(first: Card, second: Card) -> str | None:
    """Perfect Pairs on the player's two initial cards (see the module doc)."""
    if first.rank != second.rank:
        return None
    if first.suit == second.suit:
        return "perfect"
    if (first.suit in _RED) == (second.suit in _RED):
        return "coloured"
    return "mixed"


def _straight(ranks: Sequence[Rank]) -> bool:
    values = sorted(int(r) for r in ranks)
    if values[0] == values[1] or values[1] == values[2]:
        return False
    if values[2] - values[0] == 2:
        return True  # includes Q-K-A (12, 13, 14): the ace plays high
    return values == [2, 3, 14]  # A-2-3: the ace plays low; K-A-2 never wraps


def twenty_one_plus_three(first: Card, second: Card, up: Card) -> str | None:
    """21+3 on the player's two initial cards and the dealer's up card."""
    ranks = (first.rank, second.rank, up.rank)
    suited = first.suit == second.suit == up.suit
    if ranks[0] == ranks[1] == ranks[2]:
        return "suited-trips" if suited else "trips"
    straight = _straight(ranks)
    if straight and suited:
        return "straight-flush"
    if straight:
        return "straight"
    if suited:
        return "flush"
    return None


def hot_three(first: Card, second: Card, up: Card) -> str | None:
    """Hot 3 on the player's two initial cards and the dealer's up card."""
    if first.rank == second.rank == up.rank == Rank.SEVEN:
        return "777"  # seed 002 "7-7-7": any suits; it outranks a suited 21
    total, _ = total_of((first, second, up))
    if total == 21:
        return "suited-21" if first.suit == second.suit == up.suit else "21"
    if total in (19, 20):
        return str(total)
    return None


def bust_it(dealer_cards: Sequence[Card]) -> str | None:
    """Bust It on the dealer's final cards: the card count when the dealer busts."""
    total, _ = total_of(dealer_cards)
    if total <= 21:
        return None
    n = len(dealer_cards)
    return "8+" if n >= 8 else str(n)
