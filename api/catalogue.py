"""The games on offer: variants, bet options, paytables and their exact, certified RTP.

Every entry comes from the game's registry entry (``games.registry``): the games played
before the registry keep their top-level keys (``red_dog``, ``video_poker``: their
``catalogue_key``), every other game is under ``other_games``. The figures are the games'
own exact maths; video poker's full cycle (about a second) is computed once per process on
first use (``croupier serve`` warms it in the background at start-up); blackjack's
certification takes seconds, so it ships as data (``games/blackjack/certified_figures.json``).
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
