"""Typed errors of the live blackjack tables; each has a stable ``code`` (wire format)."""

from __future__ import annotations

from ledger.errors import LedgerError


class TableNotFound(LedgerError):
    code = "table-not-found"


class TableExists(LedgerError):
    code = "table-exists"


class InvalidTableConfig(LedgerError):
    code = "invalid-table-config"


class BettingClosed(LedgerError):
    """seed 002 "Puntare": bets are accepted only while the betting window is open."""

    code = "betting-closed"


class StepClosed(LedgerError):
    """A decision for a step (or insurance window) that is not open now."""

    code = "step-closed"


class NotSeated(LedgerError):
    """The session has no seat (no bets) in the table's current round."""

    code = "not-seated"


class SideBetWithoutMain(LedgerError):
    """seed 002: side bets go with a main bet."""

    code = "side-bet-without-main"


class NothingToUndo(LedgerError):
    """UNDO with no chip placed in this round."""

    code = "nothing-to-undo"


class NothingToDouble(LedgerError):
    """seed 002: 2x "diviene disponibile dopo avere piazzato una puntata": with no bet
    placed in this round there is nothing to double."""

    code = "nothing-to-double"


class RepeatNotAllowed(LedgerError):
    """seed 002: REPEAT only before the first chip, and only with a previous round."""

    code = "repeat-not-allowed"


class TablePaused(LedgerError):
    code = "table-paused"


class UnknownBet(LedgerError):
    """seed 002 names five bet types: main, perfect-pairs, 21+3, hot-3, bust-it."""

    code = "unknown-bet"


class ChipLimitReached(LedgerError):
    """The seat has placed or taken back as many chips as one round allows
    (``CROUPIER_CHIP_MOVES_PER_ROUND``); ``retry_after``: seconds until this round's
    betting window closes (the next round's seat starts again from none)."""

    code = "chip-limit-reached"

    def __init__(self, message: str, retry_after: int, **ids: object) -> None:
        super().__init__(message, **ids)
        self.retry_after = retry_after


class NotDue(LedgerError):
    """The runner's step is not due yet (a window still open, a seat still deciding)."""

    code = "not-due"


class Stale(LedgerError):
    """The runner's step was for a state the table has already left (another runner, or an
    earlier attempt, did it)."""

    code = "stale"
