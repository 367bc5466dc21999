"""Operator endpoints (operator token): accounts, funding, sessions, voids, round lookup."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, status

from api import auth
from api.common import ERRORS, IdempotencyKey, canonical_session_id, casino
from api.schemas import (
    GAME_CODE_PATTERN,
    PLAYER_ID_PATTERN,
    SESSION_ID_PATTERN,
    AccountBalance,
    AccountMoved,
    AmountBody,
    GameHistory,
    OpenAccount,
    OpenSession,
    RoundDetail,
    RoundStep,
    SessionClosed,
    SessionOpened,
    VoidedRound,
    VoidRound,
    game_history,
    voided_round,
)
from ledger import commands as c
from ledger import results
from ledger.accounts import Account, account_id_for
from ledger.casino import Casino
from ledger.errors import AccountNotFound

router = APIRouter(
    prefix="/v1", tags=["operator"], dependencies=[Depends(auth.operator)], responses=ERRORS
)

App = Annotated[Casino, Depends(casino)]
PlayerIdPath = Annotated[str, Path(pattern=PLAYER_ID_PATTERN, max_length=100)]
SessionIdPath = Annotated[str, Path(pattern=SESSION_ID_PATTERN)]
GameCodePath = Annotated[
    str, Path(pattern=GAME_CODE_PATTERN, description="e.g. JB4-20261129-131541-7K3Q")
]


def _account(app: Casino, player_id: str) -> Account:
    account = app.find(Account, account_id_for(player_id))
    if account is None:
        raise AccountNotFound(f"no account for player {player_id!r}", player_id=player_id)
    return account


@router.post("/accounts", status_code=status.HTTP_201_CREATED, response_model=AccountBalance)
def open_account(body: OpenAccount, key: IdempotencyKey, app: App) -> AccountBalance:
    """Open a player's game account (conto di gioco), balance 0."""
    opened = app.command(key, c.OpenAccount(body.player_id, body.currency))
    return AccountBalance(
        player_id=opened.player_id, currency=opened.currency, balance=opened.balance
    )


@router.get("/accounts/{player_id}", response_model=AccountBalance)
def get_account(player_id: PlayerIdPath, app: App) -> AccountBalance:
    account = _account(app, player_id)
    return AccountBalance(player_id=player_id, currency=account.currency, balance=account.balance)


@router.post("/accounts/{player_id}/deposits", response_model=AccountMoved)
def deposit(
    player_id: PlayerIdPath, body: AmountBody, key: IdempotencyKey, app: App
) -> AccountMoved:
    """Fund the account from the operator's side (minor units)."""
    return _moved(app.command(key, c.Deposit(player_id, body.amount)))


@router.post("/accounts/{player_id}/withdrawals", response_model=AccountMoved)
def withdraw(
    player_id: PlayerIdPath, body: AmountBody, key: IdempotencyKey, app: App
) -> AccountMoved:
    return _moved(app.command(key, c.Withdraw(player_id, body.amount)))


def _moved(moved: results.AccountMoved) -> AccountMoved:
    return AccountMoved(player_id=moved.player_id, balance=moved.balance)


@router.get("/accounts/{player_id}/history", response_model=GameHistory)
def account_history(
    player_id: PlayerIdPath,
    app: App,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> GameHistory:
    """The player's rounds, newest first: date, game, code, stakes, wins, outcome."""
    _account(app, player_id)
    games = app.history.account_history(player_id, limit)
    return game_history(games)


@router.post("/sessions", status_code=status.HTTP_201_CREATED, response_model=SessionOpened)
def open_session(
    body: OpenSession, key: IdempotencyKey, request: Request, app: App
) -> SessionOpened:
    """Move a buy-in from the account into a new game session. The ``token`` goes to the
    game client: it acts on this session only."""
    opened = app.command(key, c.OpenSession(body.player_id, body.buy_in, body.currency))
    token: str = request.app.state.credentials.session_token(opened.session_id)
    return SessionOpened(
        session_id=opened.session_id,
        player_id=opened.player_id,
        currency=opened.currency,
        balance=opened.balance,
        account_balance=opened.account_balance,
        token=token,
    )


@router.post("/sessions/{session_id}/close", response_model=SessionClosed)
def close_session(session_id: SessionIdPath, key: IdempotencyKey, app: App) -> SessionClosed:
    """Close the session and return its balance to the account. An open round is first
    completed by its game's default action (recorded as automatic)."""
    closed = app.command(key, c.CloseSession(canonical_session_id(session_id)))
    return SessionClosed(
        session_id=closed.session_id,
        final_balance=closed.final_balance,
        account_balance=closed.account_balance,
    )


@router.get("/rounds/{game_code}", response_model=RoundDetail)
def find_round(game_code: GameCodePath, app: App) -> RoundDetail:
    """A round by its game code, with every step and its time (the seed only once the
    round has ended)."""
    rnd = app.find_round(game_code)
    steps = [_step(doc) for doc in app.history.timeline(rnd.code)]
    return RoundDetail(
        round_id=str(rnd.id),
        code=rnd.code,
        game=rnd.game,
        variant=rnd.variant,
        rules_version=rnd.rules_version,
        paytable_id=rnd.paytable_id,
        session_id=rnd.session_id,
        player_id=rnd.player_id,
        currency=rnd.currency,
        started_at=rnd.started_at,
        status=rnd.status,
        stake=rnd.stake,
        staked=rnd.staked,
        payout=rnd.payout,
        outcome=rnd.outcome,
        commitment=rnd.commitment,
        seed=rnd.seed,
        view=dict(rnd.view),
        steps=steps,
    )


def _step(doc: dict[str, Any]) -> RoundStep:
    data = {
        k: v
        for k, v in doc.items()
        if k not in ("step", "timestamp", "originator_version", "sealed_seed")
    }
    return RoundStep(
        step=doc["step"],
        version=int(doc["originator_version"]),
        timestamp=doc["timestamp"],
        data=data,
    )


@router.post("/rounds/{game_code}/void", response_model=VoidedRound)
def void_round(
    game_code: GameCodePath, body: VoidRound, key: IdempotencyKey, app: App
) -> VoidedRound:
    """After a malfunction: refund every stake, reverse any credited win, reveal the seed.
    Voiding a voided round returns its void (``already_voided``)."""
    return voided_round(
        app.command(key, c.VoidRound(game_code.upper(), body.reason, body.incident_id))
    )
