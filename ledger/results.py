"""What a command answers: one frozen result type per command, and its wire form.

A handler builds its result from values it has just computed, so a result is a frozen
dataclass (no validation, no copy): reading it is reading attributes, and a field it does
not have is a type error. Its **wire form** (:meth:`Result.wire`, a JSON object) is what
the request record (:class:`ledger.requests.Request`) stores, once; a retried request is
answered with :meth:`Result.from_wire` of that record, so it answers exactly what the
first did, even from a record written by older code.

The wire form is persisted format: a field keeps its name for ever; a field added later
has a default, which is what a record written before it reads as (a retried old void
answers ``refunded=None``, as it did). Keys a type does not name are ignored when read
back (a seamless stake's record adds its wallet outcome to the round's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from ledger.contracts import RoundStatus

Wire = dict[str, Any]
"""A result's wire form: a JSON object (str keys; str, int, bool, None, lists, objects)."""


@dataclass(frozen=True, kw_only=True)
class Result:
    """Base of every command's result (fields are keyword-only: read as written)."""

    _names: ClassVar[dict[type[Result], tuple[str, ...]]] = {}

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        names = Result._names.get(cls)
        if names is None:
            names = Result._names[cls] = tuple(f.name for f in dataclasses.fields(cls))
        return names

    def wire(self) -> Wire:
        """The JSON object the request record stores (and a retry is answered from)."""
        return {name: _plain(getattr(self, name)) for name in self._fields()}

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> Self:
        """The result a request record stores, as its command's type reads it."""
        missing = [
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in wire
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"a recorded {cls.__name__} lacks {missing}: {dict(wire)!r}")
        return cls(**{name: wire[name] for name in cls._fields() if name in wire})


def _plain(value: Any) -> Any:
    """Tuples as lists, as the JSON record reads them back (a frozen result holds tuples)."""
    return list(value) if type(value) is tuple else value


# -- accounts and sessions (ledger.banking, ledger.sessions) -------------------------------


@dataclass(frozen=True, kw_only=True)
class AccountOpened(Result):
    player_id: str
    currency: str
    balance: int


@dataclass(frozen=True, kw_only=True)
class AccountMoved(Result):
    """A deposit or a withdrawal: the account's balance after it."""

    player_id: str
    balance: int


@dataclass(frozen=True, kw_only=True)
class SessionOpened(Result):
    """A buy-in moved from the account into a new game session."""

    session_id: str
    player_id: str
    currency: str
    balance: int
    account_balance: int


@dataclass(frozen=True, kw_only=True)
class SessionClosed(Result):
    """A session closed: what it returned to the account (0 for a seamless session, whose
    money is at the operator's wallet) and the account's balance after it."""

    session_id: str
    final_balance: int
    account_balance: int


# -- rounds (ledger.play: Red Dog, Jacks or Better, any registered game) ------------------


@dataclass(frozen=True, kw_only=True)
class RoundPlayed(Result):
    """A round after a command on it (its start or a decision), as the player may see it:
    only cards already shown in ``view``; ``seed`` once the round has ended."""

    round_id: str
    code: str
    game: str
    status: RoundStatus
    stake: int
    staked: int
    payout: int
    outcome: str | None
    view: dict[str, Any]
    balance: int
    """The session's balance after this step."""
    seed: str | None
    commitment: str

    def __post_init__(self) -> None:
        # A record reads ``status`` back as its wire string: the enum, as the round has it.
        object.__setattr__(self, "status", RoundStatus(self.status))


@dataclass(frozen=True, kw_only=True)
class RoundVoided(RoundPlayed):
    """A void: the round, what moved (``refunded``, ``reversed_win``), where it landed (the
    session while open, else the account) and that balance after it. The four are None
    only in a record written before they existed (a retry answers as that record did)."""

    already_voided: bool
    refunded: int | None = None
    reversed_win: int | None = None
    landed_on: Literal["session", "account"] | None = None
    landed_balance: int | None = None


# -- seamless mode (ledger.seamless.handlers) ----------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SeamlessSessionOpened(Result):
    """A session on the operator's wallet (no buy-in: its money stays at the wallet)."""

    session_id: str
    player_id: str
    operator: str
    currency: str
    wallet: str
    """Always ``seamless``."""


@dataclass(frozen=True, kw_only=True)
class StakeIntended(Result):
    """A debit's intent, recorded before the debit is sent: the debit (its wire form) and the
    digest of the staking command it is for (a retry must carry the same)."""

    session_id: str
    transaction: Wire
    digest: str


_OUTCOME = ("session_id", "transaction_id", "stake_outcome", "cause", "error", "balance")


@dataclass(frozen=True, kw_only=True)
class StakeFinished(Result):
    """A seamless debit's outcome (``stake_outcome``: accepted, refused, unknown,
    rolled-back) with the wallet's ``balance`` when it said. ``started``: accepted and the
    staking command ran, its answer's wire form (a round, a live table's bet ...).

    The wire form is flat, as recorded since issue 16: a started stake's is the staking
    command's answer with the wallet's balance and the outcome beside it (what a retry of
    the staking request answers, read as that command's result); any other is the outcome
    alone."""

    session_id: str | None = None
    transaction_id: str
    stake_outcome: str
    cause: str | None = None
    error: str | None = None
    balance: int | None = None
    started: Wire | None = None

    def wire(self) -> Wire:
        if self.started is None:
            return {name: getattr(self, name) for name in _OUTCOME}
        return {
            **self.started,
            "balance": self.balance,
            "stake_outcome": self.stake_outcome,
            "transaction_id": self.transaction_id,
        }

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> Self:
        """A record with keys beyond the outcome's is a started stake's (see above)."""
        started = dict(wire) if set(wire) - set(_OUTCOME) else None
        outcome = {name: wire[name] for name in _OUTCOME if name in wire}
        return cls(**outcome, started=started)


@dataclass(frozen=True, kw_only=True)
class DeliveriesRecorded(Result):
    """The transaction ids whose delivery was recorded now (not those recorded before)."""

    recorded: list[str]


# -- the table chat and the player's settings (ledger.chat, ledger.player_settings) ---------


@dataclass(frozen=True, kw_only=True)
class ChatPosted(Result):
    """A message posted to a table's chat, as the table shows it."""

    table: str
    id: str
    """The message's id on the stream (a hide names it)."""
    number: int
    """The player's message number at this table."""
    author: str
    """The pseudonym the table shows (never the player id)."""
    text: str
    at: str


@dataclass(frozen=True, kw_only=True)
class ChatModerated(Result):
    """A moderation action (mute, unmute, ban, unban, hide) and the member's state after it;
    ``id``: the message a hide names."""

    table: str
    player_id: str
    action: str
    at: str
    muted_until: str | None
    banned: bool
    hidden: list[int]
    id: str | None = None


@dataclass(frozen=True, kw_only=True)
class SettingsChanged(Result):
    """The player's settings after a change: the whole set."""

    player_id: str
    settings: dict[str, Any]


def wire_of(result: Result | Mapping[str, Any]) -> Wire:
    """What the request record stores of a handler's answer: a result's wire form (an
    answer still given as a JSON object, a live table's, is stored as it is)."""
    return result.wire() if isinstance(result, Result) else dict(result)
