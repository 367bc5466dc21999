"""Every Prometheus metric croupier exports, defined once (``GET /metrics``, :mod:`api.metrics`).

Counters and histograms are counted where things happen (a command answered, a batch
written, a round settled, a wallet call made); gauges of state (checkpoint age, a table's
lag, the outbox's depth, open streams) are sampled every second by each process
(:class:`api.metrics.Sampler`). With several worker processes
(``croupier serve --workers N``) each process writes its own files under
``PROMETHEUS_MULTIPROC_DIR`` and the scrape adds them up (the library's multiprocess
mode): a gauge says how it is combined (``livesum``: open streams; ``livemax``: ages and
lags, the worst process counts).

Labels are few and bounded: a route template (never a raw path), a command's name, an
error code, a game, a variant, an ISO 4217 currency, a table id, a cell name, an
operator id. Never a player, session, round code or token. Money is in minor units.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from uuid import UUID

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # the library writes its files there at once
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# No *_created series (noise in every scrape); the function is untyped in the library.
disable_created_metrics()  # type: ignore[no-untyped-call]

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)

HTTP_REQUESTS = Counter(
    "croupier_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
HTTP_LATENCY = Histogram(
    "croupier_http_request_duration_seconds",
    "Time to answer an HTTP request (to the response's start), by method and route template.",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
COMMANDS = Counter(
    "croupier_commands",
    "Ledger commands answered, by command and outcome (ok, or the error code).",
    ["command", "outcome"],
)
COMMAND_LATENCY = Histogram(
    "croupier_command_duration_seconds",
    "Time from a command's arrival to its durable answer (queueing for its batch included).",
    ["command"],
    buckets=LATENCY_BUCKETS,
)
BATCH_SIZE = Histogram(
    "croupier_group_commit_batch_size",
    "Commands written in one group-commit transaction.",
    buckets=BATCH_BUCKETS,
)
BATCH_COLLISIONS = Counter(
    "croupier_group_commit_collisions",
    "Group-commit batches that collided, by where the try read its state: 'cache' (the"
    " batch then runs again from the store), 'store' (then command by command).",
    ["read_from"],
)
ROUNDS_SETTLED = Counter(
    "croupier_rounds_settled",
    "Rounds (live-table seats) settled, by game and currency.",
    ["game", "currency"],
)
ROUNDS_VOIDED = Counter(
    "croupier_rounds_voided",
    "Rounds (live-table seats) voided, by game and currency.",
    ["game", "currency"],
)
STAKED = Counter(
    "croupier_staked_minor",
    "Money staked on settled rounds, in the currency's minor units.",
    ["game", "currency"],
)
WON = Counter(
    "croupier_won_minor",
    "Money won (paid) on settled rounds, in the currency's minor units.",
    ["game", "currency"],
)
CHECKPOINTS = Counter(
    "croupier_checkpoints",
    "Signed checkpoints written by this process's sealer.",
    ["cell"],
)
SEALER_ERRORS = Counter(
    "croupier_sealer_errors",
    "Sealer ticks that failed (the store did not answer, or a row was refused).",
    ["cell"],
)
CHECKPOINT_AGE = Gauge(
    "croupier_checkpoint_age_seconds",
    "Seconds since the newest checkpoint known (sampled).",
    ["cell"],
    multiprocess_mode="livemax",
)
SEALER_LAG = Gauge(
    "croupier_sealer_lag_seconds",
    "Seconds since the sealer last reached its store (sealed, or found nothing new).",
    ["cell"],
    multiprocess_mode="livemax",
)
STORE_FAILING = Gauge(
    "croupier_store_failing",
    "1 while the sealer's last attempt failed (the store is named in /health), else 0.",
    ["cell"],
    multiprocess_mode="livemax",
)
UPKEEP = Gauge(
    "croupier_upkeep_processes",
    "Processes folding the views and sealing checkpoints on their timer (the holder of the "
    "upkeep's lease): 1 in a deployment that works, 0 while none does.",
    ["cell"],
    multiprocess_mode="livesum",
)
TABLE_LAG = Gauge(
    "croupier_table_phase_lag_seconds",
    "Seconds a live table's current phase is past its deadline (0: on time), sampled.",
    ["table"],
    multiprocess_mode="livemax",
)
STREAMS = Gauge(
    "croupier_stream_connections",
    "Open live-table streams (SSE) in this deployment.",
    multiprocess_mode="livesum",
)
LIMITER_REFUSALS = Counter(
    "croupier_limiter_refusals",
    "Requests refused before routing: rate limits, oversized bodies, failed authentication.",
    ["code"],
)
OUTBOX_DEPTH = Gauge(
    "croupier_seamless_outbox_depth",
    "Seamless wallet credits and rollbacks waiting to be delivered (sampled).",
    multiprocess_mode="livemax",
)
WALLET_CALLS = Counter(
    "croupier_wallet_calls",
    "Calls to operators' seamless wallets, by call and outcome.",
    ["call", "outcome"],
)
GC_PAUSE = Histogram(
    "croupier_gc_pause_seconds",
    "Time a collection of the cyclic garbage collector stopped a server process, by "
    "generation (0 young, 2 full; ledger.gc_policy).",
    ["generation"],
    buckets=(0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)
WALLET_LATENCY = Histogram(
    "croupier_wallet_call_duration_seconds",
    "Time of one call to an operator's seamless wallet.",
    ["call"],
    buckets=LATENCY_BUCKETS,
)

ALL = (
    HTTP_REQUESTS,
    HTTP_LATENCY,
    COMMANDS,
    COMMAND_LATENCY,
    BATCH_SIZE,
    BATCH_COLLISIONS,
    ROUNDS_SETTLED,
    ROUNDS_VOIDED,
    STAKED,
    WON,
    CHECKPOINTS,
    SEALER_ERRORS,
    CHECKPOINT_AGE,
    SEALER_LAG,
    STORE_FAILING,
    UPKEEP,
    TABLE_LAG,
    STREAMS,
    LIMITER_REFUSALS,
    OUTBOX_DEPTH,
    WALLET_CALLS,
    WALLET_LATENCY,
    GC_PAUSE,
)


def observe_saved(events: list[Any], aggregates: dict[Any, Any]) -> None:
    """Count the rounds settled or voided in one committed save, with their money."""
    for e in events:
        kind = type(e).__qualname__
        if kind == "Round.Settled":
            agg = aggregates.get(e.originator_id)
            game, currency = getattr(agg, "game", "?"), getattr(agg, "currency", "?")
            ROUNDS_SETTLED.labels(game, currency).inc()
            STAKED.labels(game, currency).inc(e.staked)
            WON.labels(game, currency).inc(e.payout)
        elif kind == "Round.Voided":
            agg = aggregates.get(e.originator_id)
            ROUNDS_VOIDED.labels(getattr(agg, "game", "?"), getattr(agg, "currency", "?")).inc()
        elif kind in ("TableSeat.Settled", "TableSeat.Voided"):
            seat = aggregates.get(e.originator_id)
            currency = _currency(aggregates, seat)
            if kind == "TableSeat.Voided":
                ROUNDS_VOIDED.labels("blackjack", currency).inc()
                continue
            ROUNDS_SETTLED.labels("blackjack", currency).inc()
            STAKED.labels("blackjack", currency).inc(getattr(seat, "debited", 0))
            WON.labels("blackjack", currency).inc(getattr(seat, "credited", 0))


def _currency(aggregates: dict[Any, Any], seat: Any) -> str:
    """A seat's currency: its table round's or its session's, whichever was saved with it."""
    # One look-up each (``aggregates`` is keyed by id): a settlement batch saves
    # thousands of seats, and a scan per seat made the batch quadratic.
    for name in ("round_id", "session_id"):
        try:
            agg = aggregates.get(UUID(str(getattr(seat, name, ""))))
        except ValueError:
            continue
        if agg is not None and hasattr(agg, "currency"):
            return str(agg.currency)
    return "?"
