"""The games on offer: variants, bet options, paytables and their exact, certified RTP.

Every entry comes from the game's registry entry (``games.registry``): the games played
before the registry keep their top-level keys (``red_dog``, ``video_poker``: their
``catalogue_key``), every other game is under ``other_games``. The figures are the games'
own exact maths; those that take seconds (video poker's full cycle, blackjack's
certification) are computed once per process by the games, on first use (``croupier
serve`` warms them in the background at start-up).
"""

from __future__ import annotations

from api.schemas import Catalogue
from games import registry


def catalogue() -> Catalogue:
    keyed = {e.catalogue_key: e for e in registry.GAMES.values() if e.catalogue_key}
    others = {
        game: entry()
        for game, entry in registry.catalogues().items()
        if not (game in registry.GAMES and registry.GAMES[game].catalogue_key)
    }
    typed = {key: e.catalogue() for key, e in keyed.items() if e.catalogue is not None}
    return Catalogue.model_validate({**typed, "other_games": others})
