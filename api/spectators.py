"""Spectators (seed 002 "For Fun": "l'utente può entrare all'interno del gioco per
visualizzare il funzionamento dello stesso senza effettuare puntate").

The operator issues a spectator token for one table (``POST /v1/tables/{table}/spectators``;
why a token and not a public feed: :mod:`api.auth`). With it a client reads what the table
shows everyone (``GET /v1/tables/{table}/watch``: the phase and its deadline, the shared and
dealer cards, the number of seats, the decision statistics of the open window) and its
stream (``GET /v1/tables/{table}/stream``: the table's messages and the chat, never a seat's
or a balance). It cannot bet, decide or chat: those routes want a session token.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.security import HTTPBearer
from pydantic import Field

from api import auth
from api.common import ERRORS, IdempotencyKey, casino
from api.errors import ApiError
from api.schemas import Request as Body
from api.schemas import Response
from api.table_schemas import TABLE_PATTERN, RoundState
from ledger.casino import Casino
from ledger.tables import views as queries
from ledger.tables.views import decision_statistics

router = APIRouter(prefix="/v1", tags=["tables"], responses=ERRORS)
App = Annotated[Casino, Depends(casino)]
TablePath = Annotated[str, Path(pattern=TABLE_PATTERN, max_length=40)]
MAX_MINUTES = 7 * 24 * 60


class SpectatorBody(Body):
    minutes: int | None = Field(
        None, strict=True, ge=1, le=MAX_MINUTES, description="default: spectator_token_minutes"
    )


class SpectatorToken(Response):
    table: str
    token: str = Field(description="a bearer token (or ?access_token= on the stream)")
    expires_at: str
    watch: str = Field(description="the table's shared state")
    stream: str = Field(description="the table's stream (Server-Sent Events)")
    play: str = Field(description="the reference client's page for this spectator")


class SpectatorView(Response):
    table: str
    currency: str
    round: RoundState | None
    statistics: list[dict[str, Any]] = Field(
        description="seed 002's decision statistics of the open window: situation and "
        "how many players chose each option (no seat is named)"
    )
    server_time: str


@router.post(
    "/tables/{table}/spectators",
    response_model=SpectatorToken,
    dependencies=[Depends(auth.operator)],
    tags=["operator"],
)
def issue(
    table: TablePath, body: SpectatorBody, key: IdempotencyKey, request: Request, app: App
) -> SpectatorToken:
    """A token to watch one table without a seat or a balance (it expires; nothing is
    stored: changing the API secret revokes every one)."""
    queries.table(app, table)
    settings = request.app.state.settings
    minutes = min(body.minutes or settings.spectator_token_minutes, MAX_MINUTES)
    credentials: auth.Credentials = request.app.state.credentials
    token, expires = credentials.spectator_token(table, minutes)
    return SpectatorToken(
        table=table,
        token=token,
        expires_at=datetime.fromtimestamp(expires, UTC).isoformat(),
        watch=f"/v1/tables/{table}/watch",
        stream=f"/v1/tables/{table}/stream",
        play=f"/play/#table={table}&spectator={token}",
    )


_spectator_scheme = HTTPBearer(
    scheme_name="spectator",
    description="a spectator token the operator issued for this table",
    auto_error=False,
)


async def spectator_of(
    request: Request,
    table: TablePath,
    bearer: Annotated[auth.Bearer, Depends(_spectator_scheme)],
) -> auth.Caller:
    """The spectator of this table (or the operator)."""
    caller = auth._caller(request, bearer)
    if caller.role is auth.Role.OPERATOR:
        return caller
    if caller.role is not auth.Role.SPECTATOR:
        raise ApiError(403, "forbidden", f"the {caller.role} credential is not a spectator's")
    if caller.table != table:
        raise ApiError(403, "forbidden", "this spectator token is for another table")
    return caller


@router.get("/tables/{table}/watch", response_model=SpectatorView)
def watch(
    table: TablePath, app: App, _: Annotated[auth.Caller, Depends(spectator_of)]
) -> SpectatorView:
    """What everyone at the table sees now: no seat, no session, no balance."""
    t = queries.table(app, table)
    rnd = queries.current_round(app, t)
    stats: list[dict[str, Any]] = []
    if rnd is not None and rnd.phase in ("insurance", "step") and not rnd.closed:
        step = 0 if rnd.phase == "insurance" else rnd.step
        stats = decision_statistics(app, table, rnd.number, step)
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    return SpectatorView.model_validate(
        {
            "table": table,
            "currency": t.currency,
            "round": None if rnd is None else queries.round_view(rnd),
            "statistics": stats,
            "server_time": now,
        }
    )
