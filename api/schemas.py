"""The HTTP API's wire format: pydantic request and response models, nothing else.

Money is always an ``int`` of minor units (strict: ``1.0``, ``"100"`` and ``true`` are
refused). Requests forbid unknown fields, so a typo is an error rather than a default.
Responses are built from the attributes of the ledger's results (:mod:`ledger.results`)
and read views; domain objects never cross this boundary.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from games import registry
from games.red_dog.wire import RedDogPay, RedDogVariant, RedDogView
from games.video_poker.wire import (
    DoubleUpStepView,
    LineView,
    VideoPokerPay,
    VideoPokerVariant,
    VideoPokerView,
)
from games.wire import Money, Rtp
from ledger.contracts import RoundStatus
from ledger.results import RoundPlayed, RoundVoided

__all__ = [  # the games' wire models, re-exported: they are part of this API's format
    "DoubleUpStepView",
    "LineView",
    "Money",
    "RedDogPay",
    "RedDogVariant",
    "RedDogView",
    "Rtp",
    "VideoPokerPay",
    "VideoPokerVariant",
    "VideoPokerView",
]

MAX_AMOUNT = 10**15
"""Largest amount accepted in a request (below 2**53, so every JSON client reads it exactly)."""

Amount = Annotated[
    int, Field(strict=True, gt=0, le=MAX_AMOUNT, description="an amount in minor units (> 0)")
]
PLAYER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,99}$"
PlayerId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=PLAYER_ID_PATTERN,
        description="the operator's player id (letters, digits, . _ : @ + -)",
    ),
]
Currency = Annotated[
    str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code", examples=["EUR"])
]
GAME_CODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,39}$"
SESSION_ID_PATTERN = (
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Response(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ErrorBody(BaseModel):
    """Every error. ``code`` is stable wire format; ids the error concerns may follow
    (``player_id``, ``session_id``, ``game_code``, ``request_id``, ...)."""

    model_config = ConfigDict(extra="allow")
    code: str = Field(examples=["insufficient-funds"])
    message: str


# -- operator: accounts and sessions ---------------------------------------------------------


class OpenAccount(Request):
    player_id: PlayerId
    currency: Currency


class AmountBody(Request):
    amount: Amount


class AccountBalance(Response):
    player_id: str
    currency: str | None = None
    balance: Money


class AccountMoved(Response):
    player_id: str
    balance: Money = Field(description="the account balance after the movement")


class OpenSession(Request):
    player_id: PlayerId
    buy_in: Amount
    currency: Currency | None = Field(
        default=None, description="if given, must be the account's currency"
    )


class SessionOpened(Response):
    session_id: str
    player_id: str
    currency: str
    balance: Money
    account_balance: Money
    token: str = Field(description="bearer token for the game client; acts on this session only")


class SessionClosed(Response):
    session_id: str
    final_balance: Money = Field(description="returned to the player's account")
    account_balance: Money


class SessionState(Response):
    session_id: str
    player_id: str
    currency: str
    balance: Money
    status: Literal["open", "closed"]
    open_round: str | None = Field(description="game code of the open round, if any")


class VoidRound(Request):
    reason: str = Field(min_length=1, max_length=500, pattern=r"\S")
    incident_id: str = Field(min_length=1, max_length=100, pattern=r"\S")


# -- rounds ----------------------------------------------------------------------------------


TYPED_VIEWS = (RedDogView, VideoPokerView)
"""Views named in the OpenAPI document (the games played before the registry); a game
added later has its schema in the registry and ``view`` is a JSON object there."""


RoundStatusName = Literal["open", "settled", "voided"]
STATUS_NAMES: dict[RoundStatus, RoundStatusName] = {
    RoundStatus.OPEN: "open",
    RoundStatus.SETTLED: "settled",
    RoundStatus.VOIDED: "voided",
}
"""A round's status as the response names it (the enum's wire strings)."""


class RoundView(Response):
    """A round as the player may see it: only cards already shown; the seed once it ends."""

    round_id: str
    code: str = Field(description="game code (codice partita)")
    game: str = Field(description="red-dog, video-poker, or another registered game")
    status: RoundStatusName
    stake: Money = Field(description="the first stake of the round")
    staked: Money = Field(description="everything staked in the round so far")
    payout: Money
    outcome: str | None
    view: RedDogView | VideoPokerView | dict[str, Any] = Field(
        description="the game's view; a registered game's follows its own schema"
    )
    balance: Money = Field(description="the session balance after this step")
    seed: str | None = Field(description="hex; revealed only once the round has ended")
    commitment: str = Field(description="SHA-256 of the seed, fixed when the round started")


class VoidedRound(RoundView):
    """A void's result. The four void fields are null only when a request id recorded
    before they existed is replayed (the recorded response is returned as it was)."""

    already_voided: bool
    refunded: Money | None = Field(None, description="every stake of the round, given back")
    reversed_win: Money | None = Field(
        None, description="the win credited at settlement, taken back"
    )
    landed_on: Literal["session", "account"] | None = Field(
        None, description="where both moved: the session while open, else the account"
    )
    landed_balance: Money | None = Field(
        None, description="that session's or account's balance after the void"
    )


class CurrentRound(Response):
    session_id: str
    balance: Money
    round: RoundView | None = Field(description="the open round, to resume after a reconnect")


class GameSummary(Response):
    code: str
    game: str
    variant: str
    started_at: str
    player_id: str
    session_id: str
    currency: str
    stakes: Money
    wins: Money = Field(description="the win that stands (0 once voided)")
    refunded: Money = Field(description="stakes given back by a void")
    reversed_win: Money = Field(description="the win credited at settlement, taken back by a void")
    net: int = Field(description="wins - stakes + refunded: the balance change; 0 for a void")
    landed_on: Literal["session", "account"] | None = Field(
        description="where a void's refund and reversal moved (null unless voided)"
    )
    outcome: str
    status: str
    void_reason: str | None = None
    incident_id: str | None = None
    table: str | None = Field(None, description="a live table's id (blackjack rows only)")
    bets: dict[str, Money] | None = Field(
        None, description="a live table seat's bets by type: main, perfect-pairs, 21+3, ..."
    )


class HistoryTotals(Response):
    """Sums over the listed rounds; ``net`` is what they did to the player's balance."""

    stakes: Money
    wins: Money
    refunded: Money
    reversed_win: Money
    net: int


class GameHistory(Response):
    games: list[GameSummary]
    totals: HistoryTotals


def game_history(rows: list[dict[str, Any]]) -> GameHistory:
    totals = {k: sum(r[k] for r in rows) for k in HistoryTotals.model_fields}
    return GameHistory(
        games=[GameSummary.model_validate(g) for g in rows],
        totals=HistoryTotals.model_validate(totals),
    )


class RoundStep(Response):
    step: str = Field(description="started, acted, settled or voided")
    version: int
    timestamp: str
    data: dict[str, Any]


class RoundDetail(Response):
    """One round found by its game code, with every step and its time (operator)."""

    round_id: str
    code: str
    game: str
    variant: str
    rules_version: str
    paytable_id: str
    session_id: str
    player_id: str
    currency: str
    started_at: str
    status: str
    stake: Money
    staked: Money
    payout: Money
    outcome: str | None
    commitment: str
    seed: str | None
    view: dict[str, Any]
    steps: list[RoundStep]


# -- game requests ---------------------------------------------------------------------------


class RedDogBet(Request):
    bet: Amount


class RedDogRaise(Request):
    amount: Amount = Field(description="at most the original bet")


class VideoPokerDeal(Request):
    variant: Literal["jb-4line", "jb-multi"] = "jb-4line"
    coin_value: Amount
    coins: int = Field(strict=True, ge=1, le=5, description="coins per line")
    lines: int = Field(
        default=4,
        strict=True,
        ge=1,
        le=1000,
        description="lines (hands); default 4, the only count jb-4line plays",
    )


class VideoPokerHold(Request):
    holds: list[Annotated[int, Field(strict=True, ge=0, le=4)]] = Field(
        max_length=5, description="positions 0..4 to keep"
    )


class VideoPokerDraw(Request):
    holds: list[Annotated[int, Field(strict=True, ge=0, le=4)]] | None = Field(
        default=None,
        max_length=5,
        description="positions 0..4 to keep; omitted: the last `hold`, else the proposed holds",
    )


class VideoPokerPick(Request):
    index: int = Field(strict=True, ge=0, le=3, description="one of the four face-down cards")


# -- the catalogue ---------------------------------------------------------------------------


class Catalogue(Response):
    red_dog: list[RedDogVariant]
    video_poker: list[VideoPokerVariant]
    other_games: dict[str, Any] = Field(
        default_factory=dict, description="entries of further registered games, by game"
    )


# -- auditor ---------------------------------------------------------------------------------


class CheckpointView(Response):
    seq: int
    tree_size: int
    root_hash: str
    timestamp_ms: int
    kid: str
    signature: str
    last_notification_id: int
    log_id: str | None = Field(
        None,
        description="the log id (32 hex digits) the tree head is signed under (format 2); "
        "null for a legacy format 1 head written before the log's genesis",
    )


class EventProof(Response):
    originator_id: str
    version: int
    topic: str
    notification_id: int
    leaf_index: int
    leaf_hash: str
    proof: list[str]


class InclusionProof(Response):
    """RFC 9162 inclusion proofs of each of a round's events in one checkpoint's tree."""

    game_code: str
    round_id: str
    checkpoint: CheckpointView
    events: list[EventProof]


class ConsistencyProof(Response):
    old: CheckpointView
    new: CheckpointView
    proof: list[str]


class PublicKeys(Response):
    model_config = ConfigDict(extra="allow")
    format: str
    keys: list[dict[str, Any]]


def round_view(r: RoundPlayed) -> RoundView:
    """The response to a command on a round (its start or a decision)."""
    return RoundView(
        round_id=r.round_id,
        code=r.code,
        game=r.game,
        status=STATUS_NAMES[r.status],
        stake=r.stake,
        staked=r.staked,
        payout=r.payout,
        outcome=r.outcome,
        view=game_view(r.game, r.view),
        balance=r.balance,
        seed=r.seed,
        commitment=r.commitment,
    )


def voided_round(r: RoundVoided) -> VoidedRound:
    return VoidedRound(
        round_id=r.round_id,
        code=r.code,
        game=r.game,
        status=STATUS_NAMES[r.status],
        stake=r.stake,
        staked=r.staked,
        payout=r.payout,
        outcome=r.outcome,
        view=game_view(r.game, r.view),
        balance=r.balance,
        seed=r.seed,
        commitment=r.commitment,
        already_voided=r.already_voided,
        refunded=r.refunded,
        reversed_win=r.reversed_win,
        landed_on=r.landed_on,
        landed_balance=r.landed_balance,
    )


class GameDecision(Request):
    decision: list[Any] = Field(max_length=10, description="the game's wire decision")


def game_view(game: str, view: dict[str, Any]) -> RedDogView | VideoPokerView | dict[str, Any]:
    """The round's view through its game's schema (from the registry). The views typed in
    ``RoundView`` stay models (serialised by alias, e.g. Red Dog's ``raise``); any other
    game's is checked by its schema and passed on as JSON."""
    entry = registry.entry(game)
    schema = None if entry is None else entry.view_schema
    if schema is None:
        return view
    checked = schema.model_validate(view)
    if isinstance(checked, TYPED_VIEWS):
        return checked
    found: dict[str, Any] = checked.model_dump()
    return found
