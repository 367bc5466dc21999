"""Game endpoints (the session's token): Red Dog, Jacks or Better, current round, recall.

Every action names its session in the path and must carry that session's token; the
session id used downstream is the token's own, so no request reaches another session.
Responses show only cards already dealt, and the seed only once the round has ended.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Request, Response
from pydantic import TypeAdapter

from api import auth, logs, table_catalogue, writer
from api.catalogue import catalogue
from api.common import ERRORS, IdempotencyKey, casino
from api.fast_route import FastRoute
from api.schemas import (
    Catalogue,
    CurrentRound,
    GameDecision,
    GameHistory,
    RedDogBet,
    RedDogRaise,
    RoundView,
    SessionState,
    VideoPokerDeal,
    VideoPokerDraw,
    VideoPokerHold,
    VideoPokerPick,
    game_history,
    round_view,
)
from games.video_poker.engine import InvalidLines
from games.video_poker.variants import VARIANTS
from ledger import commands as c
from ledger.casino import Casino
from ledger.play import round_played
from ledger.results import RoundPlayed
from ledger.tables.players import CODE_PREFIX

router = APIRouter(prefix="/v1", tags=["game"], responses=ERRORS, route_class=FastRoute)

App = Annotated[Casino, Depends(casino)]
# A game action: its closed-session check runs inside its command (``auth.session_actor``).
Player = Annotated[auth.Actor, Depends(auth.session_actor)]
Reader = Annotated[auth.Caller, Depends(auth.session_reader)]
LAST_GAMES = 10


_ROUND_VIEW = TypeAdapter(RoundView)


def _answer(result: RoundPlayed) -> Response:
    """A game action's response: the bytes FastAPI makes of the RoundView for
    ``response_model=RoundView`` (its ``dump_json`` by alias), built here so that FastAPI
    does not validate the RoundView just built against the model a second time."""
    body = _ROUND_VIEW.dump_json(round_view(result), by_alias=True)
    logs.note_game_code(result.code)  # the RoundView's ``code``: the request log's field
    return Response(body, media_type="application/json")


async def _act(caller: auth.Actor, key: str, cmd: c.Command[RoundPlayed]) -> Response:
    """Run a game action's command (``api.writer``: answered by the group-commit writer
    through a loop future, no worker thread) with its closed-session check."""
    return _answer(await writer.command(caller.casino, key, cmd, caller.check))


def _sid(caller: auth.Caller | auth.Actor) -> str:
    assert caller.session_id is not None  # set by session_actor / session_reader
    return caller.session_id


@router.get("/games", response_model=Catalogue, dependencies=[Depends(auth.any_caller)])
def games(request: Request, app: App) -> Catalogue:
    """Games and variants with bet options, paytables and exact RTP (any credential);
    ``other_games.blackjack.tables``: the live tables, as ``GET /v1/tables`` lists them."""
    doc = catalogue()
    if "blackjack" in doc.other_games:
        rows = table_catalogue.rows(request.app.state, app)  # in cells: every cell's
        doc.other_games["blackjack"] = {**doc.other_games["blackjack"], "tables": rows}
    return doc


@router.get("/sessions/{session_id}", response_model=SessionState)
def session_state(caller: Reader, app: App) -> SessionState:
    session = app.get_session(_sid(caller))
    return SessionState(
        session_id=str(session.id),
        player_id=session.player_id,
        currency=session.currency,
        balance=session.balance,
        status="closed" if session.closed else "open",
        open_round=session.open_round,
    )


@router.get("/sessions/{session_id}/round", response_model=CurrentRound)
def currentround_view(caller: Reader, app: App) -> CurrentRound:
    """The open round, if any, as the player last saw it: resume after a reconnect. A
    seat in a live blackjack round is not one (its table state resumes it: ``GET
    /v1/sessions/{id}/tables/{table}``), so it answers no round."""
    session = app.get_session(_sid(caller))
    open_code = session.open_round or ""
    seated = open_code.startswith(f"{CODE_PREFIX}-")
    rnd = None if seated else app.open_round(_sid(caller))
    view = None if rnd is None else round_view(round_played(rnd, session.balance))
    return CurrentRound(session_id=str(session.id), balance=session.balance, round=view)


@router.get("/sessions/{session_id}/history", response_model=GameHistory)
def last_games(caller: Reader, app: App) -> GameHistory:
    """The last 10 games of this session, newest first."""
    app.get_session(_sid(caller))  # 404 for an unknown session
    games = app.history.last_games(_sid(caller), LAST_GAMES)
    return game_history(games)


# -- any registered game -------------------------------------------------------------------

GamePath = Annotated[str, Path(pattern=r"^[a-z][a-z0-9-]{0,39}$", description="e.g. red-dog")]


@router.post("/sessions/{session_id}/games/{game}/start", response_model=RoundView)
async def start_round(
    game: GamePath,
    body: Annotated[dict[str, Any], Body(description="the game's params, e.g. its bet")],
    key: IdempotencyKey,
    caller: Player,
) -> Response:
    """Start a round of any registered game with its params (its rules check them)."""
    return await _act(caller, key, c.StartRound(_sid(caller), game, body))


@router.post("/sessions/{session_id}/games/{game}/decide", response_model=RoundView)
async def decide(
    game: GamePath, body: GameDecision, key: IdempotencyKey, caller: Player
) -> Response:
    """A decision on the open round of any registered game, in its wire form."""
    return await _act(caller, key, c.Decide(_sid(caller), game, tuple(body.decision)))


# -- Red Dog (seed 003) ----------------------------------------------------------------------


@router.post("/sessions/{session_id}/red-dog/bet", response_model=RoundView)
async def red_dog_bet(body: RedDogBet, key: IdempotencyKey, caller: Player) -> Response:
    """Stake a bet and deal two cards (a pair or consecutive cards settle at once)."""
    return await _act(caller, key, c.RedDogBet(_sid(caller), body.bet))


@router.post("/sessions/{session_id}/red-dog/raise", response_model=RoundView)
async def red_dog_raise(body: RedDogRaise, key: IdempotencyKey, caller: Player) -> Response:
    """Raise by up to the original bet, then the third card decides."""
    return await _act(caller, key, c.RedDogRaise(_sid(caller), body.amount))


@router.post("/sessions/{session_id}/red-dog/see", response_model=RoundView)
async def red_dog_see(key: IdempotencyKey, caller: Player) -> Response:
    """No raise: the third card decides."""
    return await _act(caller, key, c.RedDogSee(_sid(caller)))


@router.post("/sessions/{session_id}/red-dog/repeat", response_model=RoundView)
async def red_dog_repeat(key: IdempotencyKey, caller: Player) -> Response:
    """The same bet as the session's last Red Dog round, dealt at once."""
    return await _act(caller, key, c.RedDogRepeat(_sid(caller)))


# -- Jacks or Better (seeds 000 and 004) -----------------------------------------------------


@router.post("/sessions/{session_id}/video-poker/deal", response_model=RoundView)
async def video_poker_deal(body: VideoPokerDeal, key: IdempotencyKey, caller: Player) -> Response:
    """Stake coin value x coins x lines and deal five cards with the proposed holds."""
    offered = VARIANTS[body.variant].lines
    if "lines" not in body.model_fields_set and len(offered) > 1:  # the default is jb-4line's
        raise InvalidLines(
            None, offered, f"{body.variant} needs lines: how many hands, one of {offered}"
        )
    deal = c.VideoPokerDeal(_sid(caller), body.variant, body.coin_value, body.coins, body.lines)
    return await _act(caller, key, deal)


@router.post("/sessions/{session_id}/video-poker/hold", response_model=RoundView)
async def video_poker_hold(body: VideoPokerHold, key: IdempotencyKey, caller: Player) -> Response:
    """Record the player's hold selection (its own step in the round's history); no cards
    are drawn and no money moves. A later draw without holds uses it."""
    return await _act(caller, key, c.VideoPokerHold(_sid(caller), tuple(body.holds)))


@router.post("/sessions/{session_id}/video-poker/draw", response_model=RoundView)
async def video_poker_draw(
    key: IdempotencyKey, caller: Player, body: Annotated[VideoPokerDraw | None, Body()] = None
) -> Response:
    """Hold the given positions (or the last `hold`, else the proposed holds) and draw the
    rest, each line from its own deck. The body is optional: none draws as `{}` does."""
    holds = None if body is None or body.holds is None else tuple(body.holds)
    return await _act(caller, key, c.VideoPokerDraw(_sid(caller), holds))


@router.post("/sessions/{session_id}/video-poker/collect", response_model=RoundView)
async def video_poker_collect(key: IdempotencyKey, caller: Player) -> Response:
    """Take the pending win: it is credited and the round ends."""
    return await _act(caller, key, c.VideoPokerCollect(_sid(caller)))


@router.post("/sessions/{session_id}/video-poker/double", response_model=RoundView)
async def video_poker_double(key: IdempotencyKey, caller: Player) -> Response:
    """Stake the whole pending win on a double-up step."""
    return await _act(caller, key, c.VideoPokerDouble(_sid(caller)))


@router.post("/sessions/{session_id}/video-poker/half-double", response_model=RoundView)
async def video_poker_half_double(key: IdempotencyKey, caller: Player) -> Response:
    """Stake half the pending win (rounded down) and bank the rest."""
    return await _act(caller, key, c.VideoPokerHalfDouble(_sid(caller)))


@router.post("/sessions/{session_id}/video-poker/pick", response_model=RoundView)
async def video_poker_pick(body: VideoPokerPick, key: IdempotencyKey, caller: Player) -> Response:
    """Pick one of the four face-down cards against the dealer's card."""
    return await _act(caller, key, c.VideoPokerPick(_sid(caller), body.index))
