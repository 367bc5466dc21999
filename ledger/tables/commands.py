"""Commands of the live blackjack tables (operator, player, runner) and what each answers.

Frozen dataclasses like :mod:`ledger.commands` (``name`` and the body are wire format,
stored in request records). Each command is a ``Command[R]`` of its frozen result ``R``
(:class:`ledger.results.Result`), whose wire form the request record stores: a field a
result has kept its name from the dicts older code recorded, and a field added later has
a default, so a retry answered from an old record reads as the first answer did.

The runner's commands carry the time it acted on (``at``) and are scoped per table; their
request id names (round, action, step, round version), so two runners sending the same
action are one request: the second is answered, never re-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from games.blackjack import Phase
from ledger.commands import Command, R, SessionCommand, check_void_grounds
from ledger.errors import InvalidRequest
from ledger.results import Result

# -- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SeatChanged(Result):
    """A player's command at a table: the seat after it and the session's balance.

    ``seated`` False: no seat (joining or leaving with none: the balance alone), bets
    cancelled by leaving before the deal, or every chip taken back (status ``no-bet``: as
    a session that never bet, not part of the round)."""

    balance: int
    seated: bool = True
    seat_id: str | None = None
    code: str | None = None
    bets: dict[str, int] = field(default_factory=dict)
    status: str | None = None
    decisions: dict[str, list[str | None]] = field(default_factory=dict)
    """Per step ("0": insurance): [what applied, what was asked for, why it was replaced]."""


@dataclass(frozen=True, kw_only=True)
class SeatDecided(SeatChanged):
    """A decision: ``applied`` is what the engine applied; ``automatic`` when seed 002's
    automatic action replaced the one asked for (an unfunded double or split)."""

    applied: str
    automatic: bool


@dataclass(frozen=True, kw_only=True)
class TableCreated(Result):
    table: str
    currency: str
    config: dict[str, Any]
    """The full configuration (defaults filled in), as recorded."""


@dataclass(frozen=True, kw_only=True)
class TableConfigured(Result):
    table: str
    config: dict[str, Any]
    applies_from_round: int


@dataclass(frozen=True, kw_only=True)
class TablePaused(Result):
    """A pause or a resume: whether the round is paused now, and its (moved) deadline."""

    table: str
    paused: bool
    deadline: str | None = None


@dataclass(frozen=True, kw_only=True)
class TableRoundVoided(Result):
    code: str
    already_voided: bool
    refunded: int
    reversed_win: int


@dataclass(frozen=True, kw_only=True)
class RunnerStep(Result):
    """What one runner step did to round ``round``: the phase it left it in."""

    round: int
    phase: Phase

    def __post_init__(self) -> None:
        # read back from a record, a phase is its wire string: the engine's enum again
        if not isinstance(self.phase, Phase):
            object.__setattr__(self, "phase", Phase(self.phase))


@dataclass(frozen=True, kw_only=True)
class RoundOpened(RunnerStep):
    code: str


@dataclass(frozen=True, kw_only=True)
class BettingStarted(RunnerStep):
    deadline: str


@dataclass(frozen=True, kw_only=True)
class RoundDealt(RunnerStep):
    """``seats`` dealt in; none: the round waits for a first bet (``waiting``)."""

    seats: int
    waiting: bool = False


@dataclass(frozen=True, kw_only=True)
class InsuranceClosed(RunnerStep):
    dealer_blackjack: bool


@dataclass(frozen=True, kw_only=True)
class StepClosed(RunnerStep):
    step: int
    """The step that closed."""


@dataclass(frozen=True, kw_only=True)
class DealerPlayed(RunnerStep):
    pass


@dataclass(frozen=True, kw_only=True)
class BatchSettled(Result):
    round: int
    batch: int
    settled: int


@dataclass(frozen=True, kw_only=True)
class RoundFinished(RunnerStep):
    next_start: int | None
    """The shoe position the next round starts at; None: the shoe is done."""


def _check_table(table: object) -> None:
    if not isinstance(table, str) or not 0 < len(table) <= 40:
        raise InvalidRequest("a table id is a non-empty string of at most 40 characters")


# -- operator ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateTable(Command[TableCreated]):
    name: ClassVar[str] = "blackjack_create_table"
    table: str
    currency: str
    config: dict[str, Any]

    def __post_init__(self) -> None:
        _check_table(self.table)


@dataclass(frozen=True)
class ConfigureTable(Command[TableConfigured]):
    """Applies from the next round (the open round keeps its copy)."""

    name: ClassVar[str] = "blackjack_configure_table"
    table: str
    config: dict[str, Any]


@dataclass(frozen=True)
class PauseTable(Command[TablePaused]):
    """seed 002 "Errori": the round is paused while an operator looks."""

    name: ClassVar[str] = "blackjack_pause"
    table: str
    reason: str


@dataclass(frozen=True)
class ResumeTable(Command[TablePaused]):
    name: ClassVar[str] = "blackjack_resume"
    table: str


@dataclass(frozen=True)
class VoidTableRound(Command[TableRoundVoided]):
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
class RunnerCommand(Command[R]):
    """One step of the runner on round ``number`` of ``table``, computed at ``at``.

    Every step is recorded as it always was (wire format): command ``blackjack_advance``
    with the body ``{table, number, action, step, at, early}``, so a request recorded by an
    older runner is still recognised (and answered) when this one sends the same step.
    ``action`` names the step on the wire; ``step`` is the closed step (a step's close) or
    the batch (a settlement batch), else 0; ``early`` closes a window before its deadline
    (allowed only when every connected seat has decided)."""

    name: ClassVar[str] = "blackjack_advance"
    action: ClassVar[str]
    table: str
    number: int
    at: str

    def wire_step(self) -> int:
        """The body's ``step``: the step closed, or the batch settled (else 0)."""
        return 0

    def wire_early(self) -> bool:
        return False

    @property
    def scope(self) -> str:
        return f"blackjack-runner:{self.table}"

    def body(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "number": self.number,
            "action": self.action,
            "step": self.wire_step(),
            "at": self.at,
            "early": self.wire_early(),
        }


@dataclass(frozen=True)
class OpenRound(RunnerCommand[RoundOpened]):
    """Open round ``number`` (and a new shoe when the last one is done)."""

    action: ClassVar[str] = "open"


@dataclass(frozen=True)
class StartBetting(RunnerCommand[BettingStarted]):
    """A round waiting for its first bet got one: the betting timer starts again."""

    action: ClassVar[str] = "start"


@dataclass(frozen=True)
class DealRound(RunnerCommand[RoundDealt]):
    """The betting window is over: deal (or, nobody bet, wait for a first bet)."""

    action: ClassVar[str] = "deal"


@dataclass(frozen=True)
class CloseInsurance(RunnerCommand[InsuranceClosed]):
    """Close the insurance window: the dealer peeks."""

    action: ClassVar[str] = "insurance"
    early: bool = False

    def wire_early(self) -> bool:
        return self.early


@dataclass(frozen=True)
class CloseStep(RunnerCommand[StepClosed]):
    """Close decision step ``step``: automatic actions, then the step's card."""

    action: ClassVar[str] = "step"
    step: int
    early: bool = False

    def wire_step(self) -> int:
        return self.step

    def wire_early(self) -> bool:
        return self.early


@dataclass(frozen=True)
class PlayDealer(RunnerCommand[DealerPlayed]):
    action: ClassVar[str] = "dealer"


@dataclass(frozen=True)
class SettleBatch(RunnerCommand[BatchSettled]):
    """Settle the dealt seats of batch ``batch`` (``settle_batch`` seats each)."""

    action: ClassVar[str] = "settle-batch"
    batch: int

    def wire_step(self) -> int:
        return self.batch


@dataclass(frozen=True)
class FinishRound(RunnerCommand[RoundFinished]):
    """Every dealt seat is settled: close the round (and the shoe after its cut card)."""

    action: ClassVar[str] = "settle"


# -- player --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableCommand(SessionCommand[R]):
    table: str


@dataclass(frozen=True)
class PlaceBet(TableCommand[SeatChanged]):
    """seed 002 "Puntare": a chip of ``amount`` on ``bet`` (main, perfect-pairs, 21+3,
    hot-3, bust-it)."""

    name: ClassVar[str] = "blackjack_bet"
    bet: str
    amount: int


@dataclass(frozen=True)
class UndoBet(TableCommand[SeatChanged]):
    """UNDO: the last chip placed (``everything``: all of them)."""

    name: ClassVar[str] = "blackjack_undo"
    everything: bool = False


@dataclass(frozen=True)
class RepeatBets(TableCommand[SeatChanged]):
    name: ClassVar[str] = "blackjack_repeat"


@dataclass(frozen=True)
class DoubleBets(TableCommand[SeatChanged]):
    name: ClassVar[str] = "blackjack_2x"


@dataclass(frozen=True)
class AllSideBets(TableCommand[SeatChanged]):
    name: ClassVar[str] = "blackjack_all_side_bets"


@dataclass(frozen=True)
class TableDecide(TableCommand[SeatDecided]):
    """A decision for step ``step`` (0: the insurance window) of the current round."""

    name: ClassVar[str] = "blackjack_decide"
    step: int
    decision: str


@dataclass(frozen=True)
class Connect(TableCommand[SeatChanged]):
    name: ClassVar[str] = "blackjack_connect"


@dataclass(frozen=True)
class Disconnect(TableCommand[SeatChanged]):
    name: ClassVar[str] = "blackjack_disconnect"
