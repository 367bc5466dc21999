"""Commands of the live blackjack tables: operator, player (per game session) and runner.

Frozen dataclasses like :mod:`ledger.commands` (``name`` and the body are wire format,
stored in request records). The runner's commands carry the time it acted on (``at``) and
are scoped per table; their request id names (round, action, step, round version), so two
runners sending the same action are one request: the second is answered, never re-run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ledger.commands import Command, SessionCommand, check_void_grounds
from ledger.errors import InvalidRequest


def _check_table(table: object) -> None:
    if not isinstance(table, str) or not 0 < len(table) <= 40:
        raise InvalidRequest("a table id is a non-empty string of at most 40 characters")


# -- operator ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateTable(Command):
    name: ClassVar[str] = "blackjack_create_table"
    table: str
    currency: str
    config: dict[str, Any]

    def __post_init__(self) -> None:
        _check_table(self.table)


@dataclass(frozen=True)
class ConfigureTable(Command):
    """Applies from the next round (the open round keeps its copy)."""

    name: ClassVar[str] = "blackjack_configure_table"
    table: str
    config: dict[str, Any]


@dataclass(frozen=True)
class PauseTable(Command):
    """seed 002 "Errori": the round is paused while an operator looks."""

    name: ClassVar[str] = "blackjack_pause"
    table: str
    reason: str


@dataclass(frozen=True)
class ResumeTable(Command):
    name: ClassVar[str] = "blackjack_resume"
    table: str


@dataclass(frozen=True)
class VoidTableRound(Command):
    """seed 002: a malfunction voids the round and every payment of it."""

    name: ClassVar[str] = "blackjack_void"
    table: str
    code: str
    reason: str
    incident_id: str

    def __post_init__(self) -> None:
        check_void_grounds(self.reason, self.incident_id)


# -- runner --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AdvanceTable(Command):
    """One step of the runner: ``action`` in open, start (the timer of a round that was
    waiting for its first bet), deal, insurance, step, dealer, settle-batch, settle;
    ``early`` closes a window before its deadline (allowed only when every connected seat
    has decided)."""

    name: ClassVar[str] = "blackjack_advance"
    table: str
    number: int
    action: str
    step: int
    at: str
    early: bool = False

    @property
    def scope(self) -> str:
        return f"blackjack-runner:{self.table}"


# -- player --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableCommand(SessionCommand):
    table: str


@dataclass(frozen=True)
class PlaceBet(TableCommand):
    """seed 002 "Puntare": a chip of ``amount`` on ``bet`` (main, perfect-pairs, 21+3,
    hot-3, bust-it)."""

    name: ClassVar[str] = "blackjack_bet"
    bet: str
    amount: int


@dataclass(frozen=True)
class UndoBet(TableCommand):
    """UNDO: the last chip placed (``everything``: all of them)."""

    name: ClassVar[str] = "blackjack_undo"
    everything: bool = False


@dataclass(frozen=True)
class RepeatBets(TableCommand):
    name: ClassVar[str] = "blackjack_repeat"


@dataclass(frozen=True)
class DoubleBets(TableCommand):
    name: ClassVar[str] = "blackjack_2x"


@dataclass(frozen=True)
class AllSideBets(TableCommand):
    name: ClassVar[str] = "blackjack_all_side_bets"


@dataclass(frozen=True)
class TableDecide(TableCommand):
    """A decision for step ``step`` (0: the insurance window) of the current round."""

    name: ClassVar[str] = "blackjack_decide"
    step: int
    decision: str


@dataclass(frozen=True)
class Connect(TableCommand):
    name: ClassVar[str] = "blackjack_connect"


@dataclass(frozen=True)
class Disconnect(TableCommand):
    name: ClassVar[str] = "blackjack_disconnect"
