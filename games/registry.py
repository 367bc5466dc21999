"""The game registry: one entry per game, the only list of games the other layers read.

An entry names the game's adapter (how the round lifecycle plays it) and the hooks the
edges need. The ledger composes its rounds from it, ``audit-cli round`` re-derives rounds
with it, ``audit-cli rtp`` groups and classifies plays with it, and the HTTP API builds
views and the catalogue from it, and ``audit-cli rtp --theoretical`` prints every game's
certified table from it (``CERTIFIED_ONLY``: games certified before they are played on the
ledger, Infinite Blackjack today). Adding a game is its own package plus one line in
``GAMES`` (tests add a toy game with :func:`registered`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from games.adapter import GameAdapter
from games.audit import Certified, RtpRules
from games.blackjack import certified as blackjack
from games.red_dog import audit as red_dog_audit
from games.red_dog import wire as red_dog_wire
from games.red_dog.adapter import RedDogAdapter
from games.red_dog.audit import RedDogRtp
from games.video_poker import audit as video_poker_audit
from games.video_poker import wire as video_poker_wire
from games.video_poker.adapter import VideoPokerAdapter
from games.video_poker.audit import VideoPokerRtp


@dataclass(frozen=True)
class GameEntry:
    """Everything the other layers need to know about one game."""

    adapter: GameAdapter[Any, Any, Any]
    """How the round lifecycle plays it (ledger, ``audit-cli round``)."""
    rtp: RtpRules | None = None
    """How ``audit-cli rtp`` groups, classifies and judges its rounds."""
    view_schema: type[Any] | None = None
    """The pydantic model of its round view over HTTP (None: the API's built-in one)."""
    catalogue: Callable[[], Any] | None = None
    """Its ``GET /v1/games`` entry (None: the API's built-in one)."""
    certified: Certified | None = None
    """Its rows of the certified-RTP table (``audit-cli rtp --theoretical``)."""
    catalogue_key: str | None = None
    """Its top-level key in ``GET /v1/games`` (wire format of the games listed before the
    registry: ``red_dog``, ``video_poker``); None: under ``other_games``."""

    @property
    def game(self) -> str:
        return self.adapter.game


@dataclass(frozen=True)
class CertifiedGame:
    """A game whose maths is certified but which has no round adapter yet (it is not
    played on the ledger): it has rows in the certified table and a catalogue entry only.
    When its rounds land, its line moves to ``GAMES`` as a :class:`GameEntry`."""

    game: str
    certified: Certified
    catalogue: Callable[[], Any] | None = None


GAMES: dict[str, GameEntry] = {
    e.game: e
    for e in (
        GameEntry(
            RedDogAdapter(),
            rtp=RedDogRtp(),
            view_schema=red_dog_wire.RedDogView,
            catalogue=red_dog_wire.catalogue_entry,
            certified=red_dog_audit.CERTIFIED,
            catalogue_key="red_dog",
        ),
        GameEntry(
            VideoPokerAdapter(),
            rtp=VideoPokerRtp(),
            view_schema=video_poker_wire.VideoPokerView,
            catalogue=video_poker_wire.catalogue_entry,
            certified=video_poker_audit.CERTIFIED,
            catalogue_key="video_poker",
        ),
    )
}
CERTIFIED_ONLY: dict[str, CertifiedGame] = {
    e.game: e
    for e in (CertifiedGame(blackjack.GAME, blackjack.CERTIFIED, blackjack.catalogue_entry),)
}


def entry(game: str) -> GameEntry | None:
    return GAMES.get(game)


def adapters() -> dict[str, GameAdapter[Any, Any, Any]]:
    return {name: e.adapter for name, e in GAMES.items()}


def certified_tables() -> dict[str, Certified]:
    """Every game's certified table (played games first, then the certified-only ones)."""
    played = {name: e.certified for name, e in GAMES.items() if e.certified is not None}
    return {**played, **{name: e.certified for name, e in CERTIFIED_ONLY.items()}}


def catalogues() -> dict[str, Callable[[], Any]]:
    """The catalogue entries games supply themselves (``GET /v1/games`` ``other_games``)."""
    every: list[GameEntry | CertifiedGame] = [*GAMES.values(), *CERTIFIED_ONLY.values()]
    return {e.game: e.catalogue for e in every if e.catalogue is not None}


@contextmanager
def registered(extra: GameEntry) -> Iterator[GameEntry]:
    """Register ``extra`` for the duration of a block (tests' toy games)."""
    GAMES[extra.game] = extra
    try:
        yield extra
    finally:
        GAMES.pop(extra.game, None)
