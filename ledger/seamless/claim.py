"""A seamless round's game code, claimed before the round's first debit is sent.

A debit's transaction id derives from the round's game code and the stage
(``uuid5(code/stage)``), and a code holds the second and 4 random characters: two rounds
started in one second can draw the same code. In transfer mode that only collides at
insert and the round draws again. In seamless mode the debit has gone out by then: the
wallet would see one transaction id for two debits (refused as a conflict or, for one
player staking the same amount in two sessions, taken as a duplicate of the first: a
round started on a stake the wallet took once). So the intent claims the code in its own
transaction (:func:`ledger.seamless.handlers.SeamlessHandlers.intend_stake`); a code
already claimed is refused with :class:`GameCodeTaken` before anything is sent, and the
gate draws another.
"""

from __future__ import annotations

from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.errors import Contention


class GameCodeTaken(Contention):
    """The game code a probe drew is already claimed by another seamless round (the gate
    draws again; if every draw clashed, the caller may retry: 503 with Retry-After)."""

    code = "game-code-taken"


def claim_id_for(game_code: str) -> UUID:
    return uuid5(NAMESPACE, f"game-code-claim:{game_code}")


class GameCodeClaim(Aggregate):
    TOPIC = contracts.GAME_CODE_CLAIM

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.GAME_CODE_CLAIM_CREATED

    @staticmethod
    def create_id(game_code: str) -> UUID:
        return claim_id_for(game_code)

    @event("Claimed", topic=contracts.GAME_CODE_CLAIMED)
    def __init__(self, game_code: str, session_id: str, transaction_id: str) -> None:
        self.game_code = game_code
        self.session_id = session_id
        self.transaction_id = transaction_id
