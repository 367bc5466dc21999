"""The narrow port through which a round's stakes on a seamless session are authorised.

:class:`ledger.play.Rounds` asks :func:`main_stake` before a round starts and
:func:`added_stake` before a decision adds to the stake (a Red Dog raise); a live table's
handlers ask :func:`table_stake` before a bet or a decision stakes. For a transfer
session both return at once. For a seamless session a stake is only taken inside a
command run by :mod:`ledger.seamless.gate`:

- when probing (the gate learns what a command would stake, on a scratch unit of work),
  the port raises :class:`StakeNeeded` with the stage, the amount and the game code;
- when finishing (the wallet accepted that debit), it checks the stake is the one
  accepted and gives the round its game code (the transaction id derives from it);
- anywhere else it refuses: a seamless stake never bypasses the wallet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from ledger.errors import LedgerError


class GameSession(Protocol):  # ledger.accounts.GameSession (which imports this module)
    @property
    def seamless(self) -> bool: ...

    @property
    def id(self) -> object: ...

    @property
    def stake_intents(self) -> int: ...


ADDED_STAGE = {"red-dog": "raise"}
"""The wallet stage of a stake added by a decision, per game (default ``double``)."""


class StakeNeeded(Exception):
    """Raised while probing: the command would stake ``amount`` at ``stage`` of ``code``."""

    def __init__(self, code: str, stage: str, amount: int) -> None:
        super().__init__(f"{code} {stage} {amount}")
        self.code, self.stage, self.amount = code, stage, amount


class StakeNotAuthorised(LedgerError):
    """A stake on a seamless session that the wallet has not accepted (a bug if seen)."""

    code = "stake-not-authorised"


@dataclass(frozen=True)
class Accepted:
    code: str
    stage: str
    amount: int


_PROBE = "probe"
_MODE: ContextVar[str | Accepted | None] = ContextVar("croupier_seamless_stake", default=None)


@contextmanager
def probing() -> Iterator[None]:
    token = _MODE.set(_PROBE)
    try:
        yield
    finally:
        _MODE.reset(token)


@contextmanager
def accepted(stake: Accepted) -> Iterator[None]:
    token = _MODE.set(stake)
    try:
        yield
    finally:
        _MODE.reset(token)


def check_taken(session: GameSession, amount: int) -> None:
    """Called by the session itself before it records a seamless stake: only inside the
    command that runs an accepted debit (anything else is refused)."""
    if session.seamless and not isinstance(_MODE.get(), Accepted):
        raise StakeNotAuthorised(
            f"stake {amount} of a seamless session without a debit accepted by the wallet",
            session_id=session.id,
        )


def main_stake(session: GameSession, amount: int, new_code: Callable[[], str]) -> str | None:
    """The game code of a seamless round whose main stake the wallet accepted (None: a
    transfer session, which makes its own code)."""
    if not session.seamless:
        return None
    return _authorise(session, None, "main", amount, new_code)


def added_stake(session: GameSession, game: str, code: str, decision_no: int, amount: int) -> None:
    """Authorise a stake added by the round's ``decision_no``-th decision."""
    if session.seamless:
        stage = f"{ADDED_STAGE.get(game, 'double')}:{decision_no}"
        _authorise(session, code, stage, amount, lambda: code)


def table_stage(session: GameSession, kind: str, what: str | None, n: int) -> str:
    """A live table's debit stage: ``<kind>:[<what>.]<n>.<session hex>`` (the round is
    shared by every seat: the session names the seat, ``n`` its debit among the session's
    debit intents, so a bet undone and placed again gets a new transaction id)."""
    sid = str(session.id).replace("-", "")
    return f"{kind}:{'' if what is None else what + '.'}{n}.{sid}"


def table_stake(
    session: GameSession, code: str, kind: str, what: str | None, amount: int
) -> str | None:
    """Authorise a live table's stake of ``amount`` (one command's, however many chips):
    the stage the wallet accepted, or None for a transfer session."""
    if not session.seamless:
        return None
    intents = session.stake_intents
    # While probing the intent is not recorded yet; once accepted it is the last one.
    n = intents + 1 if _MODE.get() == _PROBE else intents
    stage = table_stage(session, kind, what, n)
    _authorise(session, code, stage, amount, lambda: code)
    return stage


def _authorise(
    session: GameSession, code: str | None, stage: str, amount: int, new_code: Callable[[], str]
) -> str:
    mode = _MODE.get()
    if mode == _PROBE:
        raise StakeNeeded(code or new_code(), stage, amount)
    if (
        isinstance(mode, Accepted)
        and mode.stage == stage
        and mode.amount == amount
        and (code is None or code == mode.code)
    ):
        return mode.code
    raise StakeNotAuthorised(
        f"stake {amount} ({stage}) of a seamless session was not accepted by the wallet",
        session_id=session.id,
        game_code=code,
    )
