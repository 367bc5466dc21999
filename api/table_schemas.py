"""Wire format of the live Infinite Blackjack tables: requests and responses (pydantic).

Requests forbid unknown fields; money is an ``int`` of minor units. A command's response
is built from its typed result's attributes (:mod:`ledger.tables.commands`); the views
from the ledger's read views (:mod:`ledger.tables.views`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from api.schemas import Amount, Currency, Money, Request, Response

TABLE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$"
TableId = Annotated[
    str, Field(pattern=TABLE_PATTERN, max_length=40, description="table id, e.g. ibj-1")
]
BetType = Literal["main", "perfect-pairs", "21+3", "hot-3", "bust-it"]
StepDecision = Literal["hit", "stand", "double", "split", "cash-out"]
Limit = Annotated[list[Amount], Field(min_length=2, max_length=2, description="[min, max]")]
Window = Annotated[int, Field(strict=True, ge=1_000, le=600_000, description="milliseconds")]


# -- operator requests -----------------------------------------------------------------------


class Limits(Request):
    main: Limit | None = None
    perfect_pairs: Limit | None = Field(None, alias="perfect-pairs")
    twenty_one_plus_three: Limit | None = Field(None, alias="21+3")
    hot_3: Limit | None = Field(None, alias="hot-3")
    bust_it: Limit | None = Field(None, alias="bust-it")


class Paytables(Request):
    perfect_pairs: Literal["perfect-pairs-25-12-6"] | None = Field(None, alias="perfect-pairs")
    twenty_one_plus_three: Literal["21+3-100-40-30-10-5"] | None = Field(None, alias="21+3")
    hot_3: Literal["hot-3-100-20-4-2-1"] | None = Field(None, alias="hot-3")
    bust_it: Literal["bust-it-1-2-9-50-100-250"] | None = Field(None, alias="bust-it")


class TableConfig(Request):
    """A table's settings; each one left out keeps the default (GET /v1/tables shows the
    defaults in force)."""

    limits: Limits | None = Field(None, description="[min, max] per bet type, minor units")
    chip: Amount | None = Field(
        None, description="the chip ALL SIDE BETS places (at least each side's minimum)"
    )
    betting_ms: Window | None = None
    insurance_ms: Window | None = None
    step_ms: Window | None = None
    grace_ms: int | None = Field(None, strict=True, ge=0, le=10_000)
    decks: int | None = Field(None, strict=True, ge=1, le=8)
    penetration_permille: list[Annotated[int, Field(strict=True, ge=1, le=999)]] | None = Field(
        None, min_length=2, max_length=2, description="[min, max] of the cut card, per mille"
    )
    ten_up: Literal["all-bets", "original-only"] | None = None
    cashout_table_id: Literal["cashout-v1"] | None = None
    paytables: Paytables | None = None
    settle_batch: int | None = Field(None, strict=True, ge=1, le=10_000)

    def ledger_config(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, by_alias=True)


class CreateTable(Request):
    table: TableId
    currency: Currency
    config: TableConfig | None = Field(None, description="settings; left out: the defaults")


class ConfigureTable(Request):
    config: TableConfig


class PauseTable(Request):
    reason: str = Field(min_length=1, max_length=500, pattern=r"\S")


# -- player requests -------------------------------------------------------------------------


class PlaceBet(Request):
    bet: BetType
    amount: Amount


class Insurance(Request):
    take: bool = Field(strict=True, description="true: insure (half the main bet); false: no")


class Decide(Request):
    step: int = Field(strict=True, ge=1, le=100, description="the open step (round.step)")
    decision: StepDecision


class PlayerSettingsBody(Request):
    """seed 002 "Impostazioni": applied all together; one left out takes its default."""

    show_cash_out: bool | None = Field(None, strict=True, description="show the cash-out decision")
    show_chat: bool | None = Field(None, strict=True)
    sound: bool | None = Field(None, strict=True)
    video_quality: Literal["auto", "low", "medium", "high"] | None = None

    def ledger_settings(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


# -- responses -------------------------------------------------------------------------------


class PlayerSettings(Response):
    player_id: str
    settings: dict[str, bool | str]


class SeatChanged(Response):
    """A player's command at a table: the seat's bets and the session balance after it."""

    table: str
    seated: bool = Field(description="the session has a seat (bets) in the current round")
    seat_id: str | None = Field(
        None,
        description="the seat's aggregate id: its events in the log and in the round's "
        "inclusion proof",
    )
    code: str | None = Field(None, description="the round's game code")
    bets: dict[str, Money] = Field(default_factory=dict)
    status: str | None = None
    decisions: dict[str, list[str | None]] = Field(default_factory=dict)
    applied: str | None = Field(None, description="the decision that applied")
    automatic: bool | None = Field(None, description="the engine replaced the one asked for")
    balance: Money


class Hand(Response):
    cards: list[str]
    total: int
    soft: bool
    stake: Money
    doubled: bool
    split: bool
    blackjack: bool
    bust: bool


class SeatDecision(Response):
    decision: str
    requested: str | None = None
    automatic: str | None = Field(None, description="timeout or insufficient-balance")


class SeatView(Response):
    code: str
    status: str
    dealt: bool
    connected: bool
    bets: dict[str, Money]
    chips: list[list[str | int]]
    hands: list[Hand]
    active_hand: int | None
    insurance: int | None
    cashed_out: int | None
    decisions: dict[str, SeatDecision]
    staked: Money
    paid: Money
    result: dict[str, Any] | None


class PreviousSeat(SeatView):
    cards: dict[str, Any]
    phase: str


class TableCards(Response):
    player: list[str] = Field(description="the two player cards every seat shares")
    up: str | None
    steps: list[str] = Field(description="each closed step's card, in order")
    dealer: list[str] = Field(description="the dealer's cards shown so far")


class RoundState(Response):
    number: int
    code: str
    phase: str
    step: int | None = Field(description="the open step (0: the insurance window)")
    deadline: str | None = Field(description="server time the open window closes")
    paused: bool
    started_at: str
    cards: TableCards
    seats: int


class OptionView(Response):
    decision: str
    amount: Money = Field(description="the cost (double, split, insurance) or cash-out pay")


class StatisticView(Response):
    decision: str
    players: int


class TableState(Response):
    table: str
    currency: str
    round: RoundState | None
    seat: SeatView | None
    options: list[OptionView]
    statistics: list[StatisticView] = Field(
        description="seed 002: how many players chose each option in this seat's situation"
    )
    previous: PreviousSeat | None = Field(description="the seat in the previous round")
    balance: Money
    settings: dict[str, bool | str]
    server_time: str = Field(
        description="the server's clock when it answered (ISO 8601, UTC): compare it with "
        "round.deadline to tell whether the window has closed, whatever the client's clock"
    )


class TableRow(Response):
    """A table in the catalogue: limits, windows, paytables, certified RTP, cash-out."""

    table: str
    currency: str
    game: Literal["blackjack"] = "blackjack"
    variant: Literal["infinite"] = "infinite"
    limits: dict[str, list[int]]
    chip: int
    windows_ms: dict[str, int]
    decks: int
    penetration_permille: list[int]
    ten_up: str
    paytables: dict[str, Any]
    rtp: list[dict[str, Any]]
    cashout_table: dict[str, Any]
    round: str | None = Field(description="the current round's game code")
    phase: str | None


class TableList(Response):
    tables: list[TableRow]


class TableConfigured(Response):
    table: str
    currency: str | None = None
    config: dict[str, Any]
    applies_from_round: int | None = None


class TablePaused(Response):
    table: str
    paused: bool
    deadline: str | None = None


class TableVoided(Response):
    code: str
    already_voided: bool
    refunded: Money
    reversed_win: Money


class TableRoundDetail(Response):
    code: str
    table: str
    round: int
    shoe: int
    shoe_position: int
    started_at: str
    currency: str
    status: str
    phases: list[list[str | None]] = Field(description="[phase, time, deadline]")
    player_cards: list[str]
    step_cards: list[str]
    dealer_cards: list[str]
    seats: int
    totals: dict[str, int]
    automatic: dict[str, list[list[str]]]
    void: dict[str, str] | None
    config: dict[str, Any]
    shoe_commitment: str | None
    shoe_seed: str | None = Field(description="hex; only once the shoe is done")
    seat_list: list[dict[str, Any]]


class ShoeView(Response):
    number: int
    shoe_id: str
    decks: int
    rules_version: str
    commitment: str
    shuffled_at: str
    seed: str | None = Field(description="hex; revealed once the shoe's cut-card round ended")
    rounds: int | None


class ShoeList(Response):
    table: str
    shoes: list[ShoeView]
