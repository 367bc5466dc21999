"""The Shoe aggregate: one per shoe of a table (DESIGN §5.3 "Randomness").

Its first event commits to ``SHA-256(seed)`` and holds the seed sealed with AES-GCM under
the sealing key (the helpers of :mod:`ledger.rounds`, with the shoe's id as associated
data), so a restarted runner deals the same cards; its last event, written once the round
that brought out the cut card has settled, reveals the seed. In between the log holds only
cards already shown (in the table rounds), never an undealt one.
"""

from __future__ import annotations

from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE


def shoe_id_for(table: str, number: int) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-shoe:{table}:{number}")


class TableShoe(Aggregate):
    TOPIC = contracts.SHOE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.SHOE_CREATED

    @staticmethod
    def create_id(table: str, number: int) -> UUID:
        return shoe_id_for(table, number)

    @event("Shuffled", topic=contracts.SHOE_SHUFFLED)
    def __init__(
        self,
        table: str,
        number: int,
        decks: int,
        rules_version: str,
        commitment: str,
        sealed_seed: str,
        sealing_kid: str,
        shuffled_at: str,
    ) -> None:
        self.table = table
        self.number = number
        self.decks = decks
        self.rules_version = rules_version
        self.commitment = commitment
        self.sealed_seed = sealed_seed
        self.sealing_kid = sealing_kid
        self.shuffled_at = shuffled_at
        self.seed: str | None = None
        self.rounds: int = 0

    @event("Revealed", topic=contracts.SHOE_REVEALED)
    def revealed(self, seed: str, rounds: int, last_round: str) -> None:
        """seed 002: the shoe is done once the cut-card round has settled."""
        self.seed = seed
        self.rounds = rounds
