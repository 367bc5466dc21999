"""Live Infinite Blackjack tables over HTTP: the catalogue and the player's endpoints.

Player endpoints take the session's token and name the session in the path, like the other
games (``/v1/sessions/{id}/tables/{table}/...``): the session id used downstream is the
token's own, so no request reaches another session's seat. Each POST is one command of
:mod:`ledger.tables.commands` (join = ``Connect``, leave = ``Disconnect``, bets,
undo, repeat, 2x, all side bets, insurance and step decisions = ``TableDecide``) with the
``Idempotency-Key`` as its request id. ``GET`` of the table returns what the game client
shows now (:func:`ledger.tables.views.session_view`): only cards the round has shown.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from api import auth
from api.common import ERRORS, IdempotencyKey, casino
from api.table_catalogue import table_row
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

router = APIRouter(prefix="/v1", tags=["tables"], responses=ERRORS)

App = Annotated[Casino, Depends(casino)]
Player = Annotated[auth.Caller, Depends(auth.session_player)]
Reader = Annotated[auth.Caller, Depends(auth.session_reader)]
TablePath = Annotated[
    str, Path(pattern=TABLE_PATTERN, max_length=40, description="table id, e.g. ibj-1")
]
SEAT = "/sessions/{session_id}/tables/{table}"


def _sid(caller: auth.Caller) -> str:
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


# -- catalogue ---------------------------------------------------------------------------------


@router.get("/tables", response_model=TableList, dependencies=[Depends(auth.any_caller)])
def list_tables(app: App) -> TableList:
    """Every live table: limits per bet type, windows, paytables, certified RTP of the
    main game, every side bet, insurance and always cashing out, the cash-out offers."""
    rows = [table_row(t, views.current_round(app, t)) for t in views.tables(app)]
    return TableList.model_validate({"tables": rows})


@router.get("/tables/{table}", response_model=TableRow, dependencies=[Depends(auth.any_caller)])
def get_table(table: TablePath, app: App) -> TableRow:
    t = views.table(app, table)
    return TableRow.model_validate(table_row(t, views.current_round(app, t)))


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
def join(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """Come to the table (or back after a drop): a seat in the round is marked connected
    again. Bets are placed with ``bets``; nothing else is needed to join."""
    return seat_changed(table, app.command(key, tc.Connect(_sid(caller), table)))


@router.post(f"{SEAT}/leave", response_model=SeatChanged)
def leave(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """Leave the table (seed 002 "Disconnessione"): before the betting deadline the
    seat's bets are cancelled and refunded; after it they stand and the seat gets the
    automatic decisions; the result is in the history."""
    return seat_changed(table, app.command(key, tc.Disconnect(_sid(caller), table)))


@router.post(f"{SEAT}/bets", response_model=SeatChanged)
def place_bet(
    table: TablePath, body: PlaceBet, key: IdempotencyKey, caller: Player, app: App
) -> SeatChanged:
    """A chip of ``amount`` on a bet type while the betting window is open (a late bet
    is 409 ``betting-closed``); each type's limits apply to its running total."""
    cmd = tc.PlaceBet(_sid(caller), table, body.bet, body.amount)
    return seat_changed(table, app.command(key, cmd))


@router.post(f"{SEAT}/undo", response_model=SeatChanged)
def undo(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """UNDO: take back the last chip placed (repeatedly: in reverse order)."""
    return seat_changed(table, app.command(key, tc.UndoBet(_sid(caller), table)))


@router.post(f"{SEAT}/undo-all", response_model=SeatChanged)
def undo_all(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """UNDO all: take back every chip placed in this round."""
    cmd = tc.UndoBet(_sid(caller), table, everything=True)
    return seat_changed(table, app.command(key, cmd))


@router.post(f"{SEAT}/repeat", response_model=SeatChanged)
def repeat(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """REPEAT: the bets of the session's previous round at this table (before any chip)."""
    return seat_changed(table, app.command(key, tc.RepeatBets(_sid(caller), table)))


@router.post(f"{SEAT}/double", response_model=SeatChanged)
def double_bets(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """2x: double every bet placed, all or none (within the limits and the balance)."""
    return seat_changed(table, app.command(key, tc.DoubleBets(_sid(caller), table)))


@router.post(f"{SEAT}/all-side-bets", response_model=SeatChanged)
def all_side_bets(table: TablePath, key: IdempotencyKey, caller: Player, app: App) -> SeatChanged:
    """ALL SIDE BETS: one chip on each side bet (after the main bet)."""
    return seat_changed(table, app.command(key, tc.AllSideBets(_sid(caller), table)))


@router.post(f"{SEAT}/insurance", response_model=SeatChanged)
def insurance(
    table: TablePath, body: Insurance, key: IdempotencyKey, caller: Player, app: App
) -> SeatChanged:
    """Take insurance (half the main bet, pays 2:1) or not, while the dealer shows an ace."""
    decision = "insure" if body.take else "no-insurance"
    cmd = tc.TableDecide(_sid(caller), table, 0, decision)
    return seat_changed(table, app.command(key, cmd))


@router.post(f"{SEAT}/decide", response_model=SeatChanged)
def decide(
    table: TablePath, body: Decide, key: IdempotencyKey, caller: Player, app: App
) -> SeatChanged:
    """Hit, stand, double, split or cash out in the open step (``step`` names it, so a
    decision meant for a step that has just closed is refused, 409 ``step-closed``).
    A double or split the balance does not cover gets seed 002's automatic action."""
    cmd = tc.TableDecide(_sid(caller), table, body.step, body.decision)
    return seat_changed(table, app.command(key, cmd))


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
