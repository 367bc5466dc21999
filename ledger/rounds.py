"""One aggregate per round: committed seed, stakes, decisions, settlement or void.

The first event records the game, variant, rules version, paytable id, stake, game code,
``SHA-256(seed)`` and the seed sealed with AES-GCM under the sealing key; the last event
(settled or voided) reveals the seed. Between the two, only cards already shown appear in
the log, so reading the database mid-round reveals no undealt card.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.contracts import RoundStatus
from ledger.entropy import token_bytes
from ledger.errors import RoundNotOpen
from ledger.ids import uuid5

CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
"""The random part of every game code (a round's, a live table round's): Crockford base32,
no I, L, O or U (read aloud or typed by a player without confusion)."""
assert len(CODE_ALPHABET) == 32  # random_code takes 5 bits a character


def round_id_for(code: str) -> UUID:
    """Round ids derive from game codes, so lookup by code needs no index and codes are
    unique by construction (a clash is a version conflict on save, and the command
    retries with a new code)."""
    return uuid5(NAMESPACE, f"round:{code.upper()}")


def random_code(length: int) -> str:
    """``length`` characters of :data:`CODE_ALPHABET`, each uniform and independent: 5
    bits of one read of the OS CSPRNG each (the alphabet has 32 characters, so no
    character is likelier than another). One read, not one a character: a system call
    costs about a microsecond on this kind of machine, and a round's code is on the
    path of every bet."""
    return "".join([CODE_ALPHABET[b & 31] for b in token_bytes(length)])


def new_game_code(prefix: str, now: datetime) -> str:
    """E.g. ``RD-20261129-131541-7K3Q``: game, start time in GMT, 4 random characters."""
    return f"{prefix}-{now.astimezone(UTC):%Y%m%d-%H%M%S}-{random_code(4)}"


def new_seed() -> bytes:
    """256 bits from the OS CSPRNG (DESIGN §1.4)."""
    return token_bytes(32)


def commitment(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()


def seal_seed(key: bytes, round_id: UUID, seed: bytes) -> str:
    nonce = token_bytes(12)
    return (nonce + AESGCM(key).encrypt(nonce, seed, round_id.bytes)).hex()


def unseal_seed(key: bytes, round_id: UUID, sealed: str) -> bytes:
    raw = bytes.fromhex(sealed)
    return AESGCM(key).decrypt(raw[:12], raw[12:], round_id.bytes)


class Round(Aggregate):
    TOPIC = contracts.ROUND
    # [decision number, amount] of every stake a decision added (a seamless void rolls
    # each one back); rebuilt from the Acted events, so older rounds have it too.
    added_stakes: tuple[tuple[int, int], ...] = ()

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.ROUND_CREATED

    @staticmethod
    def create_id(code: str) -> UUID:
        return round_id_for(code)

    @event("Started", topic=contracts.ROUND_STARTED)
    def __init__(
        self,
        code: str,
        game: str,
        variant: str,
        rules_version: str,
        paytable_id: str,
        session_id: str,
        player_id: str,
        currency: str,
        stake: int,
        params: dict[str, Any],
        started_at: str,
        commitment: str,
        sealed_seed: str,
        sealing_kid: str,
        view: dict[str, Any],
        chosen_cards: dict[str, list[str]] | None = None,
    ) -> None:
        self.code = code
        self.game = game
        self.variant = variant
        self.rules_version = rules_version
        self.paytable_id = paytable_id
        self.session_id = session_id
        self.player_id = player_id
        self.currency = currency
        self.stake = stake
        self.staked = stake
        self.params = dict(params)
        self.started_at = started_at
        self.commitment = commitment
        self.sealed_seed = sealed_seed
        self.sealing_kid = sealing_kid
        self.decisions: list[list[Any]] = []
        self.view = dict(view)
        # Cards chosen by a test's card source (games.deal): such a round is not certified,
        # and says so in its first event. Absent (older rounds) and null mean seed-dealt.
        self.chosen_cards = None if chosen_cards is None else dict(chosen_cards)
        self.status = RoundStatus.OPEN
        self.payout = 0
        self.win_credited = 0
        self.seed: str | None = None
        self.outcome: str | None = None

    def check_open(self) -> None:
        if self.status != RoundStatus.OPEN:
            raise RoundNotOpen(f"round {self.code} is {self.status}", game_code=self.code)

    @event("Acted", topic=contracts.ROUND_ACTED)
    def acted(
        self, decision: list[Any], automatic: bool, stake_added: int, view: dict[str, Any]
    ) -> None:
        self.decisions = [*self.decisions, list(decision)]
        self.staked += stake_added
        if stake_added:
            self.added_stakes = (*self.added_stakes, (len(self.decisions), stake_added))
        self.view = dict(view)

    @event("Settled", topic=contracts.ROUND_SETTLED)
    def settled(
        self, payout: int, outcome: str, staked: int, seed: str, view: dict[str, Any]
    ) -> None:
        self.status = RoundStatus.SETTLED
        self.payout = payout
        self.win_credited = payout
        self.outcome = outcome
        self.seed = seed
        self.view = dict(view)

    @event("Voided", topic=contracts.ROUND_VOIDED)
    def voided(
        self, reason: str, incident_id: str, refunded: int, reversed_win: int, seed: str
    ) -> None:
        self.status = RoundStatus.VOIDED
        self.outcome = "voided"
        self.seed = seed
        self.void_reason = reason
        self.incident_id = incident_id
        self.refunded = refunded
        self.reversed_win = reversed_win
