"""``GET /v1/audit/report``: the regulator's report (:mod:`audit_cli.report`) for auditors.

Computed by the same code as ``audit-cli report``, from this server's raw log (the rows
and their envelopes, not the application's state), so the online figures and an
auditor's offline ones cannot differ. It reads the whole log on each request: a report is
asked for daily, not per round, and an auditor trusts no view. The operator's daily
figures are read from the daily totals view instead (``GET /v1/totals/daily``).
"""

from __future__ import annotations

from typing import Annotated

from anyio import to_thread
from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from api import auth
from api.common import ERRORS
from api.errors import ApiError
from audit_cli.report import UTC_ZONE, build_report
from ledger.settings import SQLITE_FILE, Settings

router = APIRouter(
    prefix="/v1/audit",
    tags=["auditor"],
    dependencies=[Depends(auth.auditor)],
    responses=ERRORS,
)


class DayView(BaseModel):
    day: str
    zone: str
    game: str
    variant: str
    currency: str
    rounds: int
    voided: int
    stakes: int
    wins: int
    refunds: int
    reversed: int
    ggr: int
    rtp_observed: float | None
    rtp_low: float | None
    rtp_high: float | None
    rtp_certified: float | None


class SessionView(BaseModel):
    session_id: str
    player_id: str
    currency: str
    opened_at: str
    closed_at: str | None
    buy_in: int
    final_balance: int | None
    rounds: int
    stakes: int
    wins: int
    refunds: int
    reversed: int
    ggr: int
    seamless: bool


class TotalView(BaseModel):
    currency: str
    rounds: int
    voided: int
    open_rounds: int
    stakes: int
    wins: int
    refunds: int
    reversed: int
    ggr: int


class ReportView(BaseModel):
    zone: str
    level: float
    days: list[DayView]
    sessions: list[SessionView]
    totals: list[TotalView]
    findings: list[str]


def store_of(settings: Settings) -> str:
    """What ``audit-cli --db`` would be given for this server's store."""
    return settings.database_url or str(settings.data_dir / SQLITE_FILE)


@router.get("/report", response_model=ReportView)
async def report(
    request: Request,
    zone: Annotated[
        str, Query(max_length=64, description="IANA zone, e.g. Europe/Rome")
    ] = UTC_ZONE,
) -> ReportView:
    """Per day (UTC and ``zone``), game, variant and currency: rounds, voids, stakes,
    wins, refunds, GGR, observed RTP with its 99 % interval against the certified figure;
    per game session: buy-in, final balance, rounds; totals per currency."""
    from zoneinfo import available_timezones

    if zone != UTC_ZONE and zone not in available_timezones():
        raise ApiError(422, "invalid-request", f"unknown time zone {zone!r}")
    settings: Settings = request.app.state.settings
    built = await to_thread.run_sync(build_report, store_of(settings), zone)
    return ReportView.model_validate(built.to_dict())
