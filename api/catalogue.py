"""The games on offer: variants, bet options, paytables and their exact, certified RTP.

Every entry comes from the game's registry entry (``games.registry``): the games played
before the registry keep their top-level keys (``red_dog``, ``video_poker``: their
``catalogue_key``), every other game is under ``other_games``. The figures are the games'
own exact maths; those that take seconds (video poker's full cycle, blackjack's
certification) are computed once per process by the games, on first use (``croupier
serve`` warms them in the background at start-up).
"""

from __future__ import annotations

from typing import Any

from api.schemas import Catalogue
from games import registry


def catalogue() -> Catalogue:
    doc: dict[str, Any] = {"other_games": {}}
    for game, entry in registry.catalogues().items():
        played = registry.entry(game)
        key = None if played is None else played.catalogue_key
        if key is None:
            doc["other_games"][game] = entry()
        else:
            doc[key] = entry()
    return Catalogue.model_validate(doc)
