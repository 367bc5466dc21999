"""The game registry: one entry per game, the only list of games the other layers read.

An entry names the game's adapter (how the round lifecycle plays it) and the hooks the
edges need. The ledger composes its rounds from it, ``audit-cli round`` re-derives rounds
with it, ``audit-cli rtp`` groups and classifies plays with it, and the HTTP API builds
views and the catalogue from it. Adding a game is its own package plus one line in
``GAMES`` (tests add a toy game with :func:`registered`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from games.adapter import GameAdapter
from games.audit import RtpRules
from games.red_dog.adapter import RedDogAdapter
from games.red_dog.audit import RedDogRtp
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

    @property
    def game(self) -> str:
        return self.adapter.game


# Red Dog and Jacks or Better keep their HTTP views and catalogue entries in api/ (typed in
# the OpenAPI document); a game added later supplies its own here.
GAMES: dict[str, GameEntry] = {
    e.game: e
    for e in (
        GameEntry(RedDogAdapter(), rtp=RedDogRtp()),
        GameEntry(VideoPokerAdapter(), rtp=VideoPokerRtp()),
    )
}


def entry(game: str) -> GameEntry | None:
    return GAMES.get(game)


def adapters() -> dict[str, GameAdapter[Any, Any, Any]]:
    return {name: e.adapter for name, e in GAMES.items()}


@contextmanager
def registered(extra: GameEntry) -> Iterator[GameEntry]:
    """Register ``extra`` for the duration of a block (tests' toy games)."""
    GAMES[extra.game] = extra
    try:
        yield extra
    finally:
        GAMES.pop(extra.game, None)
