"""Where a table command's CPU goes: py-spy's folded stacks of a bench phase, sorted into
the layers a bet or a decision passes through (issue 28, item 7).

``bench/bench_table_http.py --profile DIR`` writes, per run, ``<run>-bets.txt`` (the
first round's betting: the players' start to the last bet answered),
``<run>-decisions.txt`` (the first ``bets-closed`` to the first ``dealer-played``) and
``<run>-settlement.txt`` (from there to the first ``round-settled``; give it the seats
as its commands), and records the server's CPU over each phase
(``profile_bets_cpu_s``, ``profile_decisions_cpu_s``, ``profile_settlement_cpu_s``) and
the commands answered in the first two (``profile_bets``, ``profile_decisions``).
This script sorts every sample: first by what the thread was doing (the command path,
the fan-out, the table runner, the read side, ...; the outermost frame that says so),
then, on the command path, by the innermost frame that names a layer (signing, event
encoding, the store's SQL, validation, ...). A sample whose innermost frame is a wait
(psycopg waiting for PostgreSQL's answer, a lock, the event loop's select) is counted
apart: py-spy's idle test misses some waits, and they are not CPU. The CPU of each
layer is then the phase's measured CPU shared out by the layer's share of the CPU
samples, per command answered in the phase:

    PYTHONPATH=. python bench/table_budget.py DIR/RUN-bets.txt BETS CPU_S \\
        [DIR/RUN-decisions.txt DECISIONS CPU_S] [--json]

(a profile may be gzipped: ``bench/profiles/*.txt.gz`` are the ones the docs quote).
The bench samples with ``--gil`` (only the thread holding the GIL), so a sample is the
process's Python-side CPU and the wait filter rarely applies; a profile taken without it
also samples threads waiting for the GIL, at whatever line they wait, and is not a CPU
budget. Nothing here measures: it divides what py-spy sampled and what /proc counted.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import Counter
from pathlib import Path

WAITS = (
    "Connection.wait (psycopg",
    "Condition.wait (threading",
    "Event.wait (threading",
    "Event.wait (asyncio",
    "Runner.run (asyncio/runners",
    "_worker (concurrent/futures/thread",
    "select (selectors",
    "BaseSelectorEventLoop.select",
)
"""Innermost frames that are a thread waiting, not computing."""

CONTEXTS: list[tuple[str, tuple[str, ...]]] = [
    ("table runner (deal, close steps, settle)", ("TableRunners._run", "ledger/tables/runner.py")),
    ("seat connection commands", ("api/table_connections.py",)),
    ("read side (projections)", ("ledger/readside/",)),
    ("checkpoint sealer", ("ledger/checkpoints.py",)),
    ("metrics sampler", ("Sampler.start",)),
    (
        "fan-out (read new rows, fold, encode, send)",
        (
            "api/table_stream.py",
            "api/table_feed.py",
            "api/table_messages.py",
            "Player._writer",
            "Player._catch_up",
            "stream_response",
            "EventSourceResponse",
            "sse_starlette",
        ),
    ),
    (
        "command",
        (
            "api/table_intake.py",
            "ledger/tables/intake.py",
            "Player._read",
            "Player._command",
            "Player._reader",
            "api/tables.py",
            "api/play.py",
            "table_socket.py",
        ),
    ),
]
"""What the thread was doing: the first context with a frame of the stack in it."""

READS: list[tuple[str, tuple[str, ...]]] = [
    (
        "the round's seat openings read (SEAT_OPENED rows)",
        ("seat_openings", "Players._opened_seats"),
    ),
    (
        "aggregate reads (load, verify, stale check)",
        (
            "SigningEventStore.get",
            "Repository.get",
            "select_events",
            "any_newer",
            "BatchView._load",
            "BatchView.stale",
            "to_domain_event",
            "Casino.find",
        ),
    ),
]
"""On the command path, first: a read, by any frame of the stack (its SQL and row
decoding are the read's, not the store's write)."""

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("refusal built (LedgerError)", ("LedgerError.__init__", "ApiError.__init__")),
    ("metrics (Prometheus labels, observe)", ("prometheus_client/", "observe_saved")),
    ("signing (seal, Merkle)", ("ledger/envelope.py", "ledger/merkle.py")),
    (
        "event encoding (mapper, JSON)",
        ("Mapper.to_stored_event", "JSONTranscoder", "DatetimeAsISO"),
    ),
    (
        "store write (SQL, psycopg)",
        ("SigningEventStore.put", "insert_events", "Application._record", "psycopg/"),
    ),
    ("batch copies (group_commit fresh_copy)", ("fresh_copy", "_fresh")),
    ("events built (aggregate trigger, mutate)", ("eventsourcing/domain.py",)),
    (
        "validation (window, seat, chip, decision)",
        (
            "Players._check",
            "Players._betting",
            "Players._seat",
            "check_decision",
            "ledger/tables/context.py",
            "ledger/tables/config.py",
            "TableRound.settings",
        ),
    ),
    ("command handler (ledger/tables, games)", ("ledger/tables/", "games/")),
    (
        "request id (idempotency)",
        ("ledger/requests.py", "request_aggregate_id", "body_digest", "check_request_id"),
    ),
    ("authorization (closed session, command rate)", ("_closed_check", "api/auth.py", "Buckets")),
    (
        "unit of work (batch, commit bookkeeping)",
        ("ledger/group_commit.py", "ledger/unit_of_work.py", "ledger/casino.py"),
    ),
    ("answer encoded (result JSON)", ("Player._answer", "model_dump_json", "seat_changed")),
    (
        "WebSocket receive + command decode",
        ("Player._read", "validate_json", "ledger_command", "websockets/", "pydantic"),
    ),
    (
        "HTTP request (REST route, middleware)",
        ("api/tables.py", "starlette/", "fastapi/", "uvicorn/", "h11", "httptools"),
    ),
    ("intake queue hand-off (queue, thread, wake-up)", ("table_intake", "intake.py", "anyio/")),
]
"""On the command path: the first layer with a frame in it, innermost frame first."""


FANOUT: list[tuple[str, tuple[str, ...]]] = [
    (
        "fan-out: send to each socket (frame, write)",
        ("Player._writer", "WebSocket.send", "websockets", "send_text", "EventSourceResponse"),
    ),
    ("fan-out: encode once (JSON)", ("encode (api/table_feed.py", "json/encoder.py")),
    (
        "fan-out: a seat's options (replay its hand)",
        ("options_message", "options_for", "games/"),
    ),
    ("fan-out: read and fold new rows", ("api/table_messages.py", "TableFold")),
    ("fan-out: poll, heartbeats, queues", ("api/table_feed.py", "api/table_stream.py")),
]
"""In the fan-out: the first part with a frame in it, innermost frame first."""


def frames(stack: str) -> list[str]:
    return [re.sub(r":\d+\)", ")", f) for f in stack.split(";")]


def classify(fr: list[str]) -> tuple[str, str]:
    if fr and fr[-1].startswith(WAITS):
        return "waiting (not CPU)", ""
    context = "other (event loop, connection set-up, start-up)"
    for name, marks in CONTEXTS:
        if any(m in f for f in fr for m in marks):
            context = name
            break
    if context.startswith("fan-out"):
        parts = FANOUT
    elif context == "command":
        for name, marks in READS:
            if any(m in f for f in fr for m in marks):
                return context, name
        parts = LAYERS
    else:
        return context, ""
    for f in reversed(fr):
        for name, marks in parts:
            if any(m in f for m in marks):
                return context, name
    return context, f"other, {context}"


PILEUP = 0.10
"""One stack, to the line, holding more than this share of a phase's samples is counted
apart: in every profile of 2026-12-03 (load 11-15) one such stack held 17-35 % of the
samples, at a line that cannot cost that much (a row built by ``dict_row``, a generator
in ``check_decision``, a different one each run): a stall of the sampler or of the
thread holding the GIL, not CPU spent there."""


def budget(path: Path) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    stacks = []
    for line in raw.decode().splitlines():
        if line.strip():
            stack, _, n = line.rpartition(" ")
            stacks.append((stack, int(n)))
    total = sum(n for _, n in stacks)
    for stack, n in stacks:
        if n > PILEUP * total:
            out[(PILED, "")] += n
        else:
            out[classify(frames(stack))] += n
    return out


PILED = "set apart: one stack piled on one line (a stall, see PILEUP)"
APART = ("waiting", "set apart")


def rows(path: Path, commands: int, cpu_s: float) -> list[tuple[str, int, float]]:
    """(row, samples, microseconds of CPU per command), biggest first, waits last."""
    counts = budget(path)
    cpu_samples = sum(n for (c, _), n in counts.items() if not c.startswith(APART))
    out = []
    for (context, layer), n in counts.items():
        name = layer or context
        us = 0.0 if context.startswith(APART) else 1e6 * cpu_s * n / cpu_samples / commands
        out.append((name, n, us))
    out.sort(key=lambda r: (r[0].startswith(APART), -r[1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phases", nargs="+", help="PROFILE COMMANDS CPU_S, once or twice")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if len(args.phases) % 3:
        ap.error("give PROFILE COMMANDS CPU_S for each phase")
    result = {}
    for i in range(0, len(args.phases), 3):
        path, commands, cpu = (
            Path(args.phases[i]),
            int(args.phases[i + 1]),
            float(args.phases[i + 2]),
        )
        table = rows(path, commands, cpu)
        result[path.name] = {"commands": commands, "cpu_s": cpu, "rows": table}
        if args.json:
            continue
        total = sum(n for _, n, _ in table)
        print(f"\n{path.name}: {commands} commands, {cpu:.1f} s server CPU, {total} samples")
        print(f"{'':52} {'samples':>8} {'us/command':>11}")
        for name, n, us in table:
            print(f"{name:52} {n:8d} {us:11,.0f}")
        print(f"{'total CPU':52} {'':8} {1e6 * cpu / commands:11,.0f}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
