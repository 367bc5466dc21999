"""``GET /v1/accounts/{player}/statement``: every movement of a player's money, paged;
``GET /v1/accounts/{player}/balances``: the player's account and sessions.

Read from the statement view (:mod:`ledger.readside.statement`, kept from the log's
movements); pages follow a cursor (``after`` is the ``seq`` of the last line seen;
``next_after`` is the cursor of the next page, or null on the last page). Each answer
says the log position it reflects (``position``); ``at_least`` asks for a position first
(a command's answer carries it in the ``X-Log-Position`` header); without it, the answer
reflects the log as it was when the request arrived.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from api import auth
from api.common import ERRORS, casino
from api.schemas import PLAYER_ID_PATTERN
from ledger.casino import Casino
from ledger.errors import AccountNotFound
from ledger.statement import statements

router = APIRouter(
    prefix="/v1", tags=["operator"], dependencies=[Depends(auth.operator)], responses=ERRORS
)
App = Annotated[Casino, Depends(casino)]


class StatementLine(BaseModel):
    seq: int = Field(description="notification id of the movement's event (the cursor)")
    time: str
    kind: str = Field(
        description="deposit, withdrawal, buy-in, session-return, stake, win, refund, reversal"
    )
    ledger: str = Field(description="account or session: whose event moved the money")
    session_id: str | None
    round_code: str | None
    amount: int = Field(description="signed change of that ledger, minor units")
    currency: str
    balance: int = Field(description="the player's money after it: account plus sessions")
    account_balance: int
    session_balance: int | None


POSITION = "the log position (notification id) this answer reflects"
AT_LEAST = (
    "answer from the log at this position or later (a command's X-Log-Position); "
    "default: the log's head when the request arrives"
)


class StatementPage(BaseModel):
    player_id: str
    lines: list[StatementLine]
    next_after: int | None = Field(description="pass as `after` for the next page; null: done")
    position: int = Field(description=POSITION)


class LedgerBalance(BaseModel):
    ledger: str = Field(description="account:<id> or session:<id>")
    balance: int


class Balances(BaseModel):
    player_id: str
    balance: int = Field(description="the player's money: account plus sessions")
    account_balance: int
    ledgers: list[LedgerBalance]
    position: int = Field(description=POSITION)


def _known(totals: dict[str, int] | None, player_id: str) -> dict[str, int]:
    """The player's totals in the view; a typed 404 for a player it does not know."""
    if totals is None:
        raise AccountNotFound(f"no account for player {player_id!r}", player_id=player_id)
    return totals


@router.get("/accounts/{player_id}/statement", response_model=StatementPage)
def account_statement(
    player_id: Annotated[str, PathParam(pattern=PLAYER_ID_PATTERN, max_length=100)],
    app: App,
    after: Annotated[int, Query(ge=0, le=2**62, description="seq of the last line seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    at_least: Annotated[int | None, Query(ge=0, le=2**62, description=AT_LEAST)] = None,
) -> StatementPage:
    """Every movement of the player's money, oldest first, with its time, round code and
    the running balances (the player's money, the account's, the session's)."""
    book = statements(app, at_least)
    totals, page = book.page(player_id, after, limit + 1)
    _known(totals, player_id)
    more = len(page) > limit
    page = page[:limit]
    return StatementPage(
        player_id=player_id,
        lines=[StatementLine.model_validate(line.to_dict()) for line in page],
        next_after=page[-1].seq if more and page else None,
        position=book.position,
    )


@router.get("/accounts/{player_id}/balances", response_model=Balances)
def account_balances(
    player_id: Annotated[str, PathParam(pattern=PLAYER_ID_PATTERN, max_length=100)],
    app: App,
    at_least: Annotated[int | None, Query(ge=0, le=2**62, description=AT_LEAST)] = None,
) -> Balances:
    """The player's money now: the account and each game session, from the statement
    view (the same running balances as the statement's last line)."""
    book = statements(app, at_least)
    found, ledgers = book.ledgers(player_id)
    totals = _known(found, player_id)
    return Balances(
        player_id=player_id,
        ledgers=[LedgerBalance(ledger=k, balance=v) for k, v in ledgers.items()],
        position=book.position,
        **totals,
    )
