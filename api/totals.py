"""``GET /v1/totals/daily``: per UTC day, game, variant and currency, the rounds, voids and
money of the house (the operator's daily figures), read from the daily totals view
(:mod:`ledger.readside.totals`). The regulator's report (``GET /v1/audit/report``) stays
computed from the raw log: an auditor trusts no view."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from api import auth
from api.common import ERRORS, casino
from ledger.casino import Casino
from ledger.readside.totals import daily

router = APIRouter(
    prefix="/v1", tags=["operator"], dependencies=[Depends(auth.operator)], responses=ERRORS
)
App = Annotated[Casino, Depends(casino)]
DAY = r"^\d{4}-\d{2}-\d{2}$"


class DayTotals(BaseModel):
    day: str = Field(description="UTC day, YYYY-MM-DD")
    game: str
    variant: str
    currency: str
    rounds: int = Field(description="rounds settled that day (a live-table seat is one)")
    voided: int = Field(description="rounds voided that day")
    stakes: int
    wins: int
    refunds: int
    reversed: int = Field(description="wins reversed by voids")
    ggr: int = Field(description="stakes - wins - refunds + reversed")
    staked: int = Field(description="staked in the rounds settled that day")
    paid: int = Field(description="paid in the rounds settled that day")
    rtp_observed: float | None = Field(description="paid / staked")


class DailyTotals(BaseModel):
    days: list[DayTotals]
    position: int = Field(description="the log position (notification id) this answer reflects")


@router.get("/totals/daily", response_model=DailyTotals)
def daily_totals(
    app: App,
    start: Annotated[str | None, Query(alias="from", pattern=DAY)] = None,
    end: Annotated[str | None, Query(alias="to", pattern=DAY)] = None,
    at_least: Annotated[
        int | None,
        Query(
            ge=0,
            le=2**62,
            description="answer from the log at this position or later; default: the log's "
            "head when the request arrives",
        ),
    ] = None,
) -> DailyTotals:
    """Per UTC day (``from`` to ``to`` inclusive), game, variant and currency: what the
    house took and paid (cash basis: each movement on the day it happened) and the rounds
    that ended that day, settled or voided."""
    rows, position = daily(app, start, end, at_least)
    return DailyTotals(days=[DayTotals.model_validate(r) for r in rows], position=position)
