"""Composition root of the HTTP API: ``create_app`` wires settings, credentials, the ledger
application and the routes. Nothing connects at import time.

Given a :class:`~ledger.casino.Casino`, the app uses it and leaves its lifecycle to the
caller (tests, benchmarks). Without one, the app opens its own on start-up from the
settings, runs the checkpoint timer, and closes it (writing a final checkpoint) on
shutdown: that is what ``croupier serve`` runs.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi_offline import FastAPIOffline

from api import (
    auditor,
    chat,
    currencies,
    errors,
    game,
    logs,
    metrics,
    operator,
    play,
    reports,
    seamless,
    spectators,
    statement,
    table_operator,
    table_socket,
    table_stream,
    tables,
    totals,
    viewer,
)
from api.auth import Credentials, load_credentials
from api.catalogue import catalogue
from api.edge import Edge
from api.front import Front
from api.health import Health
from api.health import health as sealer_health
from api.limits import Guard, command_buckets
from api.table_runners import STANDBY_SECONDS, TableRunners, ensure_default_table
from api.telemetry import no_native_telemetry
from ledger import gc_policy, switch_policy
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.contracts import SignificantKind
from ledger.readside.runner import Runner
from ledger.runner_lease import leases_for
from ledger.settings import Settings
from ledger.significant import server_event

DESCRIPTION = """\
The game provider's API of croupier, an event-sourced, certified remote game server.

* **Operator** (operator token): accounts, funding, game sessions (the response carries
  the session token for the game client), voids, rounds by game code, account history.
* **Game** (the session token): Red Dog and Jacks or Better, the current round (to resume
  after a reconnect), the last 10 games.
* **Auditor** (auditor token, read-only): checkpoints, inclusion and consistency proofs,
  the raw event log as JSON lines, the public keys.

Every mutating request needs an `Idempotency-Key` header: repeating it returns the
original response and moves nothing; the same key with a different request is a 409.
Money is always an integer of minor units. Errors are `{"code", "message", ...ids}`.
"""


def create_app(
    casino: Casino | None = None,
    settings: Settings | None = None,
    *,
    credentials: Credentials | None = None,
) -> FastAPI:
    settings = settings or (casino.settings if casino is not None else Settings())
    creds = credentials or load_credentials(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned: Casino | None = None
        runners: TableRunners | None = None
        if app.state.casino is None:
            owned = await to_thread.run_sync(bootstrap, settings)
            # One process per log runs the live tables, one does the log's upkeep (the
            # views' fold and runner, the sealer's timer): the same one in the role
            # ``all``, a tables process and a front otherwise (ledger.runner_lease).
            lease, upkeep = leases_for(owned.recorder, settings.role)
            owned.sealer.on_duty = upkeep.holds_now
            if owned.readside.commits is not None:
                owned.readside.commits.on_duty = upkeep.holds_now
            owned.sealer.start(settings.checkpoint_interval_seconds)
            # The read side's views follow the log in the background (ledger.readside).
            views = Runner(owned.readside, settings.readside_poll_seconds, upkeep.holds_now)
            views.start()
            owned.on_close.insert(0, views.stop)
            await to_thread.run_sync(server_event, owned, SignificantKind.SERVER_STARTED)
            print(
                "log genesis key (auditors pin it: audit-cli verify --pin …): "
                + "SHA256:"
                + owned.key_history.genesis_fingerprint,
                flush=True,
            )
            app.state.casino = owned
            # Every live table runs in the background (the embedded default gets one).
            created = await to_thread.run_sync(ensure_default_table, owned)
            if created is not None:
                print(f"live table {created} created (Infinite Blackjack, EUR)", flush=True)
            # A front only tells the tables process which of its commands wait
            # (ledger.tables.holds), and keeps its upkeep lease: it never ticks a table,
            # not even on standby.
            standby = None if settings.role == "front" else STANDBY_SECONDS
            runners = TableRunners(
                owned,
                lease=lease,
                upkeep=upkeep,
                standby_seconds=standby,
                read_ahead=settings.role == "tables",
            )
            runners.start()
            app.state.table_runners = runners  # api.metrics samples their tables' lag
            if owned.seamless is not None:  # roll back unknown debits, start the outbox
                await to_thread.run_sync(owned.seamless.start)
            # The video poker full cycle takes about a second: compute it before a client asks.
            threading.Thread(target=catalogue, name="croupier-catalogue", daemon=True).start()
            if settings.gc_tuned:  # a server's collector, once what start-up made is made
                gc_policy.tune()
            switch_policy.tune(settings.switch_interval_ms)  # 0: the interpreter's
        try:
            yield
        finally:
            streams = getattr(app.state, "table_streams", None)
            if streams is not None:
                await to_thread.run_sync(streams.stop)
                app.state.table_streams = None
            if runners is not None:
                await to_thread.run_sync(runners.stop)
            if owned is not None:
                await to_thread.run_sync(server_event, owned, SignificantKind.SERVER_STOPPED)
                await to_thread.run_sync(owned.close)
                app.state.casino = None

    # Swagger UI at /docs and ReDoc at /redoc with their assets served from this server
    # (fastapi-offline ships them): the docs work with no access to a CDN.
    app = FastAPIOffline(
        title="croupier",
        version="1",
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_url="/openapi.json",
        docs_url="/docs",
        redoc_url="/redoc",
        static_url="/static/api-docs",
        **no_native_telemetry(),
    )
    app.state.casino = casino
    app.state.credentials = dataclasses.replace(
        creds, opened_at=lambda sid: app.state.casino.get_session(sid).created_on.timestamp()
    )
    app.state.settings = settings
    # A session's command rate, counted over its REST commands and its table socket's.
    app.state.session_commands = command_buckets(settings.session_commands_per_second)
    errors.install(app)
    # Routes are matched in this order, each included router in turn: the players' game
    # and table actions (most requests) first. No two routers share a method and path
    # pattern, so the order changes no route's outcome, only the OpenAPI document's order.
    app.include_router(game.router)
    app.include_router(tables.router)
    app.include_router(chat.router)
    app.include_router(chat.operator_router)
    app.include_router(spectators.router)
    app.include_router(operator.router)
    app.include_router(statement.router)
    app.include_router(totals.router)
    app.include_router(currencies.router)
    app.include_router(auditor.router)
    app.include_router(reports.router)
    app.include_router(viewer.api_router)
    app.include_router(table_operator.operator_router)
    app.include_router(table_operator.auditor_router)
    app.include_router(viewer.page_router)
    app.include_router(play.router)
    app.include_router(table_stream.router)
    app.include_router(table_socket.router)
    app.include_router(seamless.router)

    @app.get("/health", response_model=Health, response_model_exclude_none=True, tags=["health"])
    async def health() -> Health:
        """Liveness and the sealer's state (no credential): the age of the newest
        checkpoint, and the sealer's last error, if its last attempt failed."""
        owned: Casino | None = app.state.casino
        return sealer_health(None if owned is None else owned.sealer)

    # Innermost: the game actions' front (api.front), inside every layer below; the
    # players' table commands too (a step's decisions arrive as one burst of requests).
    app.add_middleware(
        Front,
        routes=[*game.router.routes, *tables.seat_actions()],
        handlers=lambda: app.exception_handlers,
        overridden=lambda: bool(app.dependency_overrides),
    )
    # Outermost: authentication, rate and size limits before any body is read.
    app.add_middleware(
        Guard,
        credentials=lambda: app.state.credentials,
        max_body_bytes=settings.max_body_bytes,
        per_address=settings.requests_per_address_per_second,
        per_credential=settings.requests_per_credential_per_second,
        failures=settings.auth_failures_per_second,
        failure_burst=settings.auth_failure_burst,
        session_commands=settings.session_commands_per_second,
        commands=app.state.session_commands,
    )
    if settings.cors_allowed_origins:
        # Outside the guard: a browser's preflight carries no credential, and a refusal
        # (401, 429) must carry the CORS headers for the page to read it.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_allowed_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"],
            expose_headers=["Retry-After", "X-Croupier-Cell", "X-Log-Position"],
            max_age=600,
        )
    metrics.install(app)  # GET /metrics
    # Outermost, one layer: the request id on every log line, the HTTP metrics and
    # X-Log-Position on a command's answer; it sees the guard's refusals too.
    app.add_middleware(Edge, state=app.state, access=logs.log_format(settings) == "json")
    return app
