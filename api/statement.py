"""``GET /v1/accounts/{player}/statement``: every movement of a player's money, paged.

Read from the log's movements (:mod:`ledger.statement`); pages follow a cursor (``after``
is the ``seq`` of the last line seen; ``next_after`` is the cursor of the next page, or
null on the last page).
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


class StatementPage(BaseModel):
    player_id: str
    lines: list[StatementLine]
    next_after: int | None = Field(description="pass as `after` for the next page; null: done")


@router.get("/accounts/{player_id}/statement", response_model=StatementPage)
def account_statement(
    player_id: Annotated[str, PathParam(pattern=PLAYER_ID_PATTERN, max_length=100)],
    app: App,
    after: Annotated[int, Query(ge=0, le=2**62, description="seq of the last line seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> StatementPage:
    """Every movement of the player's money, oldest first, with its time, round code and
    the running balances (the player's money, the account's, the session's)."""
    app.account_balance(player_id)  # a typed 404 for an unknown player
    book = statements(app)
    page = book.lines(player_id, after, limit + 1)
    more = len(page) > limit
    page = page[:limit]
    return StatementPage(
        player_id=player_id,
        lines=[StatementLine.model_validate(line.to_dict()) for line in page],
        next_after=page[-1].seq if more and page else None,
    )
