"""Live tables for the operator (create, configure, pause, resume, void, a round by game
code) and for auditors (shoe commitments and reveals, a round's inclusion proof).

Each operator POST is one command of :mod:`ledger.tables.commands` with the
``Idempotency-Key`` as its request id. Auditor routes only read.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, status

from api import auditor, auth
from api.common import ERRORS, IdempotencyKey, casino
from api.schemas import GAME_CODE_PATTERN, InclusionProof, VoidRound
from api.table_schemas import (
    TABLE_PATTERN,
    ConfigureTable,
    CreateTable,
    PauseTable,
    ShoeList,
    TableConfigured,
    TablePaused,
    TableRoundDetail,
    TableVoided,
)
from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables import views

operator_router = APIRouter(
    prefix="/v1", tags=["operator"], dependencies=[Depends(auth.operator)], responses=ERRORS
)
auditor_router = APIRouter(
    prefix="/v1/audit", tags=["auditor"], dependencies=[Depends(auth.auditor)], responses=ERRORS
)

App = Annotated[Casino, Depends(casino)]
TablePath = Annotated[str, Path(pattern=TABLE_PATTERN, max_length=40)]
CodePath = Annotated[
    str, Path(pattern=GAME_CODE_PATTERN, description="e.g. IBJ-20261201-120000-7K3Q9M")
]


def _paused(result: tc.TablePaused) -> TablePaused:
    return TablePaused(table=result.table, paused=result.paused, deadline=result.deadline)


@operator_router.post(
    "/tables", status_code=status.HTTP_201_CREATED, response_model=TableConfigured
)
def create_table(body: CreateTable, key: IdempotencyKey, app: App) -> TableConfigured:
    """A new Infinite Blackjack table (settings left out take the defaults); its runner
    opens the first round (``croupier serve`` runs the runner of every table)."""
    config = {} if body.config is None else body.config.ledger_config()
    created = app.command(key, tc.CreateTable(body.table, body.currency, config))
    return TableConfigured(table=created.table, currency=created.currency, config=created.config)


@operator_router.post("/tables/{table}/config", response_model=TableConfigured)
def configure_table(
    table: TablePath, body: ConfigureTable, key: IdempotencyKey, app: App
) -> TableConfigured:
    """New settings, from the next round on (the open round keeps its own)."""
    done = app.command(key, tc.ConfigureTable(table, body.config.ledger_config()))
    return TableConfigured(
        table=done.table, config=done.config, applies_from_round=done.applies_from_round
    )


@operator_router.post("/tables/{table}/pause", response_model=TablePaused)
def pause_table(table: TablePath, body: PauseTable, key: IdempotencyKey, app: App) -> TablePaused:
    """seed 002 "Gestione degli errori": the round stops (its deadline frozen) while the
    operator looks; then resume, or void the round."""
    return _paused(app.command(key, tc.PauseTable(table, body.reason)))


@operator_router.post("/tables/{table}/resume", response_model=TablePaused)
def resume_table(table: TablePath, key: IdempotencyKey, app: App) -> TablePaused:
    """The round goes on; the open deadline moves by the pause's length."""
    return _paused(app.command(key, tc.ResumeTable(table)))


@operator_router.get("/table-rounds/{game_code}", response_model=TableRoundDetail)
def find_table_round(game_code: CodePath, app: App) -> TableRoundDetail:
    """A table round by its game code: every phase with its time, the cards shown, every
    seat's bets, decisions and payouts (the shoe's seed once the shoe is done)."""
    return TableRoundDetail.model_validate(views.round_detail(app, game_code.upper()))


@operator_router.post("/table-rounds/{game_code}/void", response_model=TableVoided)
def void_table_round(
    game_code: CodePath, body: VoidRound, key: IdempotencyKey, app: App
) -> TableVoided:
    """seed 002: a malfunction voids the round: every stake refunded, every payment of
    it reversed, open or settled. Voiding a voided round returns its void."""
    rnd = views.find_round(app, game_code.upper())
    cmd = tc.VoidTableRound(rnd.table, rnd.code, body.reason, body.incident_id)
    voided = app.command(key, cmd)
    return TableVoided(
        code=voided.code,
        already_voided=voided.already_voided,
        refunded=voided.refunded,
        reversed_win=voided.reversed_win,
    )


@auditor_router.get("/tables/{table}/shoes", response_model=ShoeList)
def table_shoes(table: TablePath, app: App) -> ShoeList:
    """Every shoe of the table: its commitment SHA-256(seed), fixed before its first
    card, and the seed once the shoe is done (never earlier)."""
    return ShoeList.model_validate({"table": table, "shoes": views.shoes(app, table)})


@auditor_router.get("/table-rounds/{game_code}/inclusion", response_model=InclusionProof)
def table_round_inclusion(
    game_code: CodePath,
    app: App,
    checkpoint: Annotated[
        int | None, Query(ge=1, le=2**62, description="checkpoint seq (default: the newest)")
    ] = None,
) -> InclusionProof:
    """Inclusion proofs of every event of a table round and of its seats."""
    rnd = views.find_round(app, game_code.upper())
    ids = views.round_originators(app, rnd)
    return auditor.inclusion(app, rnd.code, rnd.id, ids, checkpoint)
