"""Where a round's cards come from: its seed, or (tests only) cards chosen in advance.

Every engine draws each deck it needs through :func:`shuffled` with the deck's stream
label (``red-dog/deck``, ``vp/deal``, ``vp/line/0``, ``vp/double/0``, ...). Given the
round's seed (bytes) that is the certified draw, ``RandomStream(seed, label).shuffled``.
Given a :class:`ChosenCards`, the decks it names start with the chosen cards, in order,
and continue with the remaining cards in the seed's order; every other deck is the seed's.
So a test deals a named situation ("7h 7d 7s", a royal on line 2) through the same engine
code, with no search over seeds.

A round dealt from chosen cards is not certified: the ledger records the chosen cards in
the round's first event, and ``audit-cli round`` re-derives the round from them and reports
that its cards were chosen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar, TypeAlias

from games.cards import Card, CardParseError, parse_cards
from games.errors import GameRuleError
from games.rng import RandomStream

ChosenWire: TypeAlias = dict[str, list[str]]
"""Chosen cards as the log records them: stream label -> cards, e.g. ``{"red-dog/deck":
["7h", "7d", "7s"]}``."""


class ChosenCardsError(GameRuleError):
    """Chosen cards that no deck could deal (a duplicate, a card not in that deck)."""

    code: ClassVar[str] = "invalid-chosen-cards"


@dataclass(frozen=True)
class ChosenCards:
    """The round's seed plus the cards chosen to come first in some of its decks."""

    seed: bytes
    chosen: Mapping[str, tuple[Card, ...]] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, seed: bytes, doc: object) -> ChosenCards:
        """From the recorded (or a test's) form; strings may list cards ``"7h 7d 7s"``."""
        if not isinstance(doc, Mapping) or not all(isinstance(k, str) for k in doc):
            raise ChosenCardsError(f"chosen cards are a map of deck label to cards, got {doc!r}")
        chosen: dict[str, tuple[Card, ...]] = {}
        for label, cards in doc.items():
            text = cards if isinstance(cards, str) else None
            if isinstance(cards, list | tuple) and all(isinstance(c, str) for c in cards):
                text = " ".join(cards)
            if text is None:
                raise ChosenCardsError(f"the chosen cards of {label!r} are not cards: {cards!r}")
            try:
                chosen[label] = parse_cards(text)
            except CardParseError as e:
                raise ChosenCardsError(f"the chosen cards of {label!r}: {e}") from None
            if len(set(chosen[label])) != len(chosen[label]):
                raise ChosenCardsError(f"a card is chosen twice for {label!r}: {text}")
        return cls(seed, chosen)

    def to_wire(self) -> ChosenWire:
        return {label: [str(c) for c in cards] for label, cards in self.chosen.items()}

    def shuffled(self, label: str, cards: Sequence[Card]) -> list[Card]:
        seeded = RandomStream(self.seed, label).shuffled(cards)
        front = self.chosen.get(label, ())
        missing = [str(c) for c in front if c not in cards]
        if missing:
            raise ChosenCardsError(
                f"{' '.join(missing)} cannot come from the {label!r} deck (already dealt?)"
            )
        return [*front, *(c for c in seeded if c not in front)]


SHUFFLE_MEMO = 4096
"""Shuffles remembered (a deck is at most 52 references to the shared cards: ~2 MB)."""

Deal: TypeAlias = bytes | ChosenCards
"""What an engine deals a round from: its seed, or a seed with chosen cards (tests)."""


REMEMBER = True
"""Whether shuffles are remembered (``_seeded``). ``audit-cli verify`` re-runs each round
once and turns it off while it does: every round is new there, and hashing the memo's
keys (52 cards each) cost more than the few repeated shuffles it saved."""


def shuffled(deal: Deal, label: str, cards: Sequence[Card]) -> list[Card]:
    """The deck ``label`` of the round: the certified draw from the seed, or chosen cards."""
    if isinstance(deal, ChosenCards):
        return deal.shuffled(label, cards)
    if not REMEMBER:
        # Only the round being re-run: its deal deck is shuffled again by its draw.
        deck = tuple(cards)
        last = _LAST.get(label)
        if last is None or last[0] != deal or last[1] != deck:  # (cards compared by identity first)
            last = _LAST[label] = (deal, deck, RandomStream(deal, label).shuffled(deck))
        return list(last[2])
    return list(_seeded(deal, label, tuple(cards)))


_LAST: dict[str, tuple[bytes, tuple[Card, ...], list[Card]]] = {}


@lru_cache(maxsize=SHUFFLE_MEMO)
def _seeded(seed: bytes, label: str, cards: tuple[Card, ...]) -> tuple[Card, ...]:
    # The same function of (seed, label, cards), remembered: the engines re-derive a round
    # from its seed on every command (a 4-line draw shuffles its deal deck and four line
    # decks again, its collect all five once more), so most shuffles repeat one just done.
    return tuple(RandomStream(seed, label).shuffled(cards))


def seed_of(deal: Deal) -> bytes:
    return deal.seed if isinstance(deal, ChosenCards) else deal
