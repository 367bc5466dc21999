"""Live Infinite Blackjack tables over HTTP: the catalogue and the player's endpoints.

Player endpoints take the session's token and name the session in the path, like the other
games (``/v1/sessions/{id}/tables/{table}/...``): the session id used downstream is the
token's own, so no request reaches another session's seat. Each POST is one command of
:mod:`ledger.tables.commands` (join = ``Connect``, leave = ``Disconnect``, bets,
undo, repeat, 2x, all side bets, insurance and step decisions = ``TableDecide``) with the
``Idempotency-Key`` as its request id, applied through the table's intake
(:mod:`api.table_intake`) with the table socket's commands: those arriving together share
one batch and one transaction. ``GET`` of the table returns what the game client
shows now (:func:`ledger.tables.views.session_view`): only cards the round has shown.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from api import auth, table_catalogue, table_intake
from api.common import ERRORS, IdempotencyKey, casino
from api.fast_route import FastRoute
from api.table_schemas import (
    TABLE_PATTERN,
    Decide,
    Insurance,
    PlaceBet,
    PlayerSettings,
    PlayerSettingsBody,
    SeatChanged,
    TableList,
    TableRow,
    TableState,
)
from ledger.casino import Casino
from ledger.player_settings import ChangeSettings, settings_of
from ledger.tables import commands as tc
from ledger.tables import views

router = APIRouter(prefix="/v1", tags=["tables"], responses=ERRORS, route_class=FastRoute)

App = Annotated[Casino, Depends(casino)]
Player = Annotated[auth.Caller, Depends(auth.session_player)]
Actor = Annotated[auth.Actor, Depends(auth.session_actor)]
"""A player's table command: its closed-session check runs inside its batch."""
Reader = Annotated[auth.Caller, Depends(auth.session_reader)]
TablePath = Annotated[
    str, Path(pattern=TABLE_PATTERN, max_length=40, description="table id, e.g. ibj-1")
]
SEAT = "/sessions/{session_id}/tables/{table}"
_SEAT_CHANGED = TypeAdapter(SeatChanged)


def seat_actions() -> list[APIRoute]:
    """The player's table commands (``POST`` under :data:`SEAT`): the routes the game
    actions' front (:mod:`api.front`) serves, as it serves the games' own."""
    return [
        r
        for r in router.routes
        if isinstance(r, APIRoute) and r.methods == {"POST"} and r.path.startswith(f"/v1{SEAT}/")
    ]


def _sid(caller: auth.Caller | auth.Actor) -> str:
    assert caller.session_id is not None  # set by session_player / session_reader
    return caller.session_id


def seat_changed(table: str, result: tc.SeatChanged) -> SeatChanged:
    """The response of a player's command: its result's fields, and the table."""
    decided = result if isinstance(result, tc.SeatDecided) else None
    return SeatChanged(
        table=table,
        seated=result.seated,
        seat_id=result.seat_id,
        code=result.code,
        bets=result.bets,
        status=result.status,
        decisions=result.decisions,
        applied=None if decided is None else decided.applied,
        automatic=None if decided is None else decided.automatic,
        balance=result.balance,
    )


async def _run(
    request: Request, actor: auth.Actor, key: str, cmd: tc.TableCommand[Any]
) -> Response:
    """The command through its table's intake, answered with the bytes FastAPI makes of
    the ``SeatChanged`` for ``response_model=SeatChanged`` (built here, so that it is not
    validated against the model a second time, and so the front can send it as is)."""
    state = request.app.state
    result = await table_intake.run(state, actor.casino, key, cmd, actor.check)
    body = _SEAT_CHANGED.dump_json(seat_changed(cmd.table, result), by_alias=True)
    return Response(body, media_type="application/json")


# -- catalogue ---------------------------------------------------------------------------------


@router.get("/tables", response_model=TableList, dependencies=[Depends(auth.any_caller)])
def list_tables(request: Request, app: App) -> TableList:
    """Every live table: limits per bet type, windows, paytables, certified RTP of the
    main game, every side bet, insurance and always cashing out, the cash-out offers."""
    rows = table_catalogue.rows(request.app.state, app)  # in cells: every cell's
    return TableList.model_validate({"tables": rows})


@router.get("/tables/{table}", response_model=TableRow, dependencies=[Depends(auth.any_caller)])
def get_table(table: TablePath, request: Request, app: App) -> TableRow:
    return TableRow.model_validate(table_catalogue.row(request.app.state, app, table))


# -- the session's seat ----------------------------------------------------------------------


@router.get(SEAT, response_model=TableState)
def table_state(table: TablePath, caller: Reader, app: App) -> TableState:
    """The table as this session's client shows it: phase and server deadline, the cards
    shown, the seat's hands and bets, the options it may take now (with the cash-out
    amount), seed 002's decision statistics of its situation, the player's settings."""
    session = app.get_session(_sid(caller))
    settings = settings_of(app, session.player_id)
    view = views.session_view(
        app, table, _sid(caller), show_cash_out=bool(settings["show_cash_out"])
    )
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    return TableState.model_validate(
        {**view, "balance": session.balance, "settings": settings, "server_time": now}
    )


@router.post(f"{SEAT}/join", response_model=SeatChanged)
async def join(table: TablePath, key: IdempotencyKey, caller: Actor, request: Request) -> Response:
    """Come to the table (or back after a drop): a seat in the round is marked connected
    again. Bets are placed with ``bets``; nothing else is needed to join. A closed
    session joins no table (409 ``session-closed``, nothing written)."""
    return await _run(request, caller, key, tc.Connect(_sid(caller), table))


@router.post(f"{SEAT}/leave", response_model=SeatChanged)
async def leave(table: TablePath, key: IdempotencyKey, caller: Actor, request: Request) -> Response:
    """Leave the table (seed 002 "Disconnessione"): before the betting deadline the
    seat's bets are cancelled and refunded; after it they stand and the seat gets the
    automatic decisions; the result is in the history. A closed session is refused
    (409 ``session-closed``, nothing written)."""
    return await _run(request, caller, key, tc.Disconnect(_sid(caller), table))


@router.post(f"{SEAT}/bets", response_model=SeatChanged)
async def place_bet(
    table: TablePath, body: PlaceBet, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """A chip of ``amount`` on a bet type while the betting window is open (a late bet
    is 409 ``betting-closed``); each type's limits apply to its running total."""
    cmd = tc.PlaceBet(_sid(caller), table, body.bet, body.amount)
    return await _run(request, caller, key, cmd)


@router.post(f"{SEAT}/undo", response_model=SeatChanged)
async def undo(table: TablePath, key: IdempotencyKey, caller: Actor, request: Request) -> Response:
    """UNDO: take back the last chip placed (repeatedly: in reverse order)."""
    return await _run(request, caller, key, tc.UndoBet(_sid(caller), table))


@router.post(f"{SEAT}/undo-all", response_model=SeatChanged)
async def undo_all(
    table: TablePath, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """UNDO all: take back every chip placed in this round."""
    cmd = tc.UndoBet(_sid(caller), table, everything=True)
    return await _run(request, caller, key, cmd)


@router.post(f"{SEAT}/repeat", response_model=SeatChanged)
async def repeat(
    table: TablePath, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """REPEAT: the bets of the session's previous round at this table (before any chip)."""
    return await _run(request, caller, key, tc.RepeatBets(_sid(caller), table))


@router.post(f"{SEAT}/double", response_model=SeatChanged)
async def double_bets(
    table: TablePath, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """2x: double every bet placed, all or none (within the limits and the balance);
    with no bet placed in the round, 409 ``nothing-to-double``."""
    return await _run(request, caller, key, tc.DoubleBets(_sid(caller), table))


@router.post(f"{SEAT}/all-side-bets", response_model=SeatChanged)
async def all_side_bets(
    table: TablePath, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """ALL SIDE BETS: one chip on each side bet (after the main bet)."""
    return await _run(request, caller, key, tc.AllSideBets(_sid(caller), table))


@router.post(f"{SEAT}/insurance", response_model=SeatChanged)
async def insurance(
    table: TablePath, body: Insurance, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """Take insurance (half the main bet, pays 2:1) or not, while the dealer shows an ace."""
    decision = "insure" if body.take else "no-insurance"
    cmd = tc.TableDecide(_sid(caller), table, 0, decision)
    return await _run(request, caller, key, cmd)


@router.post(f"{SEAT}/decide", response_model=SeatChanged)
async def decide(
    table: TablePath, body: Decide, key: IdempotencyKey, caller: Actor, request: Request
) -> Response:
    """Hit, stand, double, split or cash out in the open step (``step`` names it, so a
    decision meant for a step that has just closed is refused, 409 ``step-closed``).
    A double or split the balance does not cover gets seed 002's automatic action."""
    cmd = tc.TableDecide(_sid(caller), table, body.step, body.decision)
    return await _run(request, caller, key, cmd)


# -- the player's settings (seed 002 "Impostazioni") -----------------------------------------


@router.get("/sessions/{session_id}/settings", response_model=PlayerSettings)
def get_settings(caller: Reader, app: App) -> PlayerSettings:
    """The player's settings, the same on every device (every session of the player)."""
    player = app.get_session(_sid(caller)).player_id
    return PlayerSettings(player_id=player, settings=settings_of(app, player))


@router.post("/sessions/{session_id}/settings", response_model=PlayerSettings)
def change_settings(
    body: PlayerSettingsBody, key: IdempotencyKey, caller: Player, app: App
) -> PlayerSettings:
    """Change the player's settings, all together (one left out takes its default)."""
    changed = app.command(key, ChangeSettings(_sid(caller), body.ledger_settings()))
    return PlayerSettings(player_id=changed.player_id, settings=changed.settings)
