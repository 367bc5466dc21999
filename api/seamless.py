"""Seamless-wallet endpoints: open a session on the operator's wallet, read its balance
there, and the reconciliation list of every wallet transaction croupier sent (issue 16).

The game itself is played on the usual routes (``/v1/sessions/{id}/red-dog/...``,
``.../video-poker/...``): a stake on a seamless session is debited at the wallet first."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, get_type_hints

from fastapi import APIRouter, Depends, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field, create_model

from api import auth
from api.common import ERRORS, IdempotencyKey, casino
from ledger.casino import Casino
from ledger.readside.wallet import page
from ledger.seamless.book import Entry, totals
from ledger.seamless.commands import OpenSeamlessSession
from ledger.seamless.errors import NoSeamlessWallet, WalletRefused, WalletUnavailable
from wallet import client as wallet_client

router = APIRouter(prefix="/v1", tags=["seamless wallet"], responses=ERRORS)
App = Annotated[Casino, Depends(casino)]
Reader = Annotated[auth.Caller, Depends(auth.session_reader)]
TOKEN = r"^[A-Za-z0-9._:@-]{1,100}$"


class OpenSeamless(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operator: str = Field(pattern=TOKEN)
    player_token: str = Field(pattern=TOKEN, description="the player's token at the wallet")
    currency: str = Field(pattern=r"^[A-Z]{3}$")


class SeamlessOpened(BaseModel):
    session_id: str
    player_id: str
    operator: str
    currency: str
    wallet: str
    balance: int = Field(description="the player's balance at the wallet when it opened")
    token: str


class WalletBalance(BaseModel):
    session_id: str
    currency: str
    balance: int = Field(description="read from the operator's wallet now, minor units")


_DESCRIPTIONS = {
    "seq": "notification id of the event that queued it (the cursor)",
    "state": "accepted, refused, unknown, rolled-back, rollback-pending, pending-outcome, "
    "pending-delivery, rejected",
    "outcome": "a debit's outcome as recorded (accepted, refused, unknown)",
}


def _entry_model() -> type[BaseModel]:
    """The reconciliation row of the API: the fields of :class:`ledger.seamless.book.Entry`
    (what ``audit-cli wallet reconcile`` lists), without the raw transaction."""
    hints = get_type_hints(Entry)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(Entry):
        if f.name == "transaction":
            continue
        default = ... if f.default is dataclasses.MISSING else f.default
        fields[f.name] = (hints[f.name], Field(default, description=_DESCRIPTIONS.get(f.name)))
    return create_model("WalletTransaction", **fields)


WalletTransaction = _entry_model()


class WalletTransactions(BaseModel):
    transactions: list[WalletTransaction]  # type: ignore[valid-type]
    totals: dict[str, Any] = Field(description="per round and per player, over this page")
    next_after: int | None = Field(description="pass as `after` for the next page; null: done")
    position: int = Field(description="the log position (notification id) this page reflects")


def _wallet(app: Casino, operator: str) -> wallet_client.WalletClient:
    wallets = {} if app.seamless is None else app.seamless.wallets
    if operator not in wallets:
        raise NoSeamlessWallet(f"operator {operator!r} has no seamless wallet configured")
    found: wallet_client.WalletClient = wallets[operator]
    return found


def read_balance(app: Casino, operator: str, token: str, currency: str) -> int:
    try:
        return _wallet(app, operator).balance(token, currency)
    except wallet_client.WalletRefused as e:
        raise WalletRefused(f"the operator's wallet refused: {e.error}", player_id=token) from e
    except wallet_client.WalletUnavailable as e:
        raise WalletUnavailable(f"the operator's wallet did not answer: {e.cause}") from e


@router.post(
    "/seamless/sessions",
    status_code=status.HTTP_201_CREATED,
    response_model=SeamlessOpened,
    dependencies=[Depends(auth.operator)],
)
def open_seamless_session(
    body: OpenSeamless, key: IdempotencyKey, request: Request, app: App
) -> SeamlessOpened:
    """A session on the operator's wallet (no buy-in): the wallet must know the player in
    this currency. Stakes are debited there, wins credited there."""
    balance = read_balance(app, body.operator, body.player_token, body.currency)
    opened = app.command(key, OpenSeamlessSession(body.operator, body.player_token, body.currency))
    token: str = request.app.state.credentials.session_token(opened.session_id)
    return SeamlessOpened(
        session_id=opened.session_id,
        player_id=opened.player_id,
        operator=opened.operator,
        currency=opened.currency,
        wallet=opened.wallet,
        balance=balance,
        token=token,
    )


@router.get("/seamless/sessions/{session_id}/balance", response_model=WalletBalance)
def seamless_balance(caller: Reader, app: App) -> WalletBalance:
    """The player's balance, read through the operator's wallet."""
    assert caller.session_id is not None
    session = app.get_session(caller.session_id)
    if session.operator is None:
        raise NoSeamlessWallet("this session is a transfer session", session_id=session.id)
    balance = read_balance(app, session.operator, session.player_id, session.currency)
    return WalletBalance(session_id=str(session.id), currency=session.currency, balance=balance)


@router.get(
    "/wallet/transactions",
    response_model=WalletTransactions,
    dependencies=[Depends(auth.operator)],
)
def wallet_transactions(
    app: App,
    operator: Annotated[str | None, Query(pattern=TOKEN)] = None,
    start: Annotated[str | None, Query(alias="from", max_length=40)] = None,
    end: Annotated[str | None, Query(alias="to", max_length=40)] = None,
    after: Annotated[int, Query(ge=0, le=2**62, description="seq of the last one seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    at_least: Annotated[
        int | None,
        Query(
            ge=0,
            le=2**62,
            description="answer from the log at this position or later (a command's "
            "X-Log-Position); default: the log's head when the request arrives",
        ),
    ] = None,
) -> WalletTransactions:
    """Reconciliation: every transaction croupier sent to the wallet with its state, oldest
    first, with totals per round and per player (``audit-cli wallet reconcile``); read
    from the wallet view (:mod:`ledger.readside.wallet`)."""
    found, position = page(app, operator, start, end, after, limit + 1, at_least)
    shown, more = found[:limit], len(found) > limit
    return WalletTransactions(
        transactions=[WalletTransaction.model_validate(e.to_dict()) for e in shown],
        totals=totals(shown),
        next_after=shown[-1].seq if more and shown else None,
        position=position,
    )
