"""The game registry: one entry per game, the only list of games the other layers read.

An entry names the game's adapter (how the round lifecycle plays it) and the hooks the
edges need. The ledger composes its rounds from it, ``audit-cli round`` re-derives rounds
with it, ``audit-cli rtp`` groups and classifies plays with it, and the HTTP API builds
views and the catalogue from it. Adding a game is its own package plus one line in
``GAMES`` (tests add a toy game with :func:`registered`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from games.adapter import GameAdapter
from games.red_dog.adapter import RedDogAdapter
from games.video_poker.adapter import VideoPokerAdapter


@dataclass(frozen=True)
class GameEntry:
    adapter: GameAdapter[Any, Any, Any]

    @property
    def game(self) -> str:
        return self.adapter.game


GAMES: dict[str, GameEntry] = {
    e.game: e
    for e in (
        GameEntry(RedDogAdapter()),
        GameEntry(VideoPokerAdapter()),
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
