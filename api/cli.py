"""``croupier``: run the server's jobs on the configured store (SQLite in ./data by default)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import socket
import sys
from datetime import UTC, datetime
from typing import Any

from api.projections_cli import add_projections
from cells.cli import add_cells
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.contracts import RoundStatus
from ledger.keys import KeyringError
from ledger.settings import SETTINGS_ERRORS, Settings, settings_problem
from wallet.sim.cli import add_wallet_sim


def cmd_demo(args: argparse.Namespace) -> int:
    """Play a short scripted session on the configured store, seal it, print what happened:
    a Red Dog round, a 4-line Jacks or Better round, the close, three players at a live
    Infinite Blackjack table for a few rounds (api/table_demo.py) and a checkpoint. Each run
    plays a new session for player ``demo``; re-running with the same --tag replays that
    run's results instead (every command is idempotent by its request id)."""
    from api import table_demo

    app = bootstrap(Settings())
    try:
        tag = args.tag or f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
        player = f"demo-{args.tag}" if args.tag else "demo"
        if _missing(app, player):
            app.open_account(f"{tag}-open", player, "EUR")
        app.deposit(f"{tag}-deposit", player, 10_000)
        sid = app.open_session(f"{tag}-session", player, 5_000).session_id
        red_dog = app.red_dog_bet(f"{tag}-rd-bet", sid, 200)
        if red_dog.status == RoundStatus.OPEN:
            red_dog = app.red_dog_see(f"{tag}-rd-see", sid)
        poker = app.vp_deal(f"{tag}-vp-deal", sid, "jb-4line", 10, 5, 4)
        poker = app.vp_act(f"{tag}-vp-draw", sid, ["draw", poker.view["recommended"]])
        if poker.status == RoundStatus.OPEN:
            poker = app.vp_act(f"{tag}-vp-collect", sid, ["collect"])
        closed = app.close_session(f"{tag}-close", sid)
        table = table_demo.play(app, tag, player)
        checkpoint = app.seal() or app.sealer.latest().view()  # type: ignore[union-attr]
        print(
            json.dumps(
                {
                    "run": tag,
                    "player": player,
                    "rounds": [
                        {
                            "code": r.code,
                            "game": r.game,
                            "outcome": r.outcome,
                            "staked": r.staked,
                            "payout": r.payout,
                        }
                        for r in (red_dog, poker)
                    ],
                    "session": closed.wire(),
                    "table": table,
                    "checkpoint": checkpoint,
                    "next": [
                        f"audit-cli round {red_dog.code}",
                        f"audit-cli round {table['rounds'][0]['code']}",
                        f"audit-cli verify --pin SHA256:{app.key_history.genesis_fingerprint}",
                        f"audit-cli history {player}",
                    ],
                },
                indent=2,
            )
        )
    finally:
        app.close()
    return 0


def _missing(app: Casino, player: str) -> bool:
    from ledger.errors import AccountNotFound

    try:
        app.account_balance(player)
    except AccountNotFound:
        return True
    return False


def cmd_seal(args: argparse.Namespace) -> int:
    app = bootstrap(Settings())
    try:
        print(json.dumps(app.seal()))
    finally:
        app.close()
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """The operator's own verification of its log (``audit-cli verify`` against the log's
    genesis key), recorded in the log as a significant event with what it found."""
    from api.reports import store_of
    from audit_cli.verify import verify_db
    from ledger.contracts import SignificantKind
    from ledger.significant import record

    settings = Settings()
    app = Casino(settings)
    try:
        pin = "SHA256:" + app.key_history.genesis_fingerprint
        report = verify_db(store_of(settings), pin=pin, jobs=args.jobs)
        checks = sorted({f.check for f in report.findings})
        summary = {
            "ok": report.ok,
            "events": report.events,
            "checkpoints": report.checkpoints,
            "findings": len(report.findings),
            "checks": checks[:20],
        }
        record(app, SignificantKind.VERIFY_RUN, **summary)
        print(json.dumps({**summary, "details": [f.message for f in report.findings[:50]]}))
    finally:
        app.close()
    return 0 if report.ok else 1


def cmd_void(args: argparse.Namespace) -> int:
    """Void a round after a malfunction: the operator's write, on the configured store
    (``audit-cli``, the auditor's tool, only reads). Its stakes are refunded and its win
    reversed, to the session while it is open, else to the account."""
    from ledger.errors import LedgerError

    app = bootstrap(Settings())
    try:
        result = app.void_round(
            args.request_id or f"void:{args.code}", args.code, args.reason, args.incident
        )
    except LedgerError as e:
        if args.json:
            print(json.dumps({"ok": False, **e.to_dict()}))
        else:
            print(f"error {e.code}: {e.message}", file=sys.stderr)
        return 1
    finally:
        app.close()
    if args.json:
        print(json.dumps(result.wire(), default=str, indent=2))
    else:
        verb = "was already voided" if result.already_voided else "voided"
        print(
            f"round {result.code} {verb}: refunded {result.refunded}, "
            f"reversed win {result.reversed_win}, {result.landed_on} balance now "
            f"{result.landed_balance}, seed {result.seed}"
        )
    return 0


def cmd_rotate_keys(args: argparse.Namespace) -> int:
    settings = Settings()
    ring = settings.keyring()
    kid = ring.rotate(settings.key_directory)
    print(json.dumps({"current": kid, "keys": sorted(ring.public_keys)}))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the HTTP API with uvicorn on the configured store until interrupted."""
    if args.cells:
        from cells.cli import serve_cells

        return serve_cells(args)
    import uvicorn

    from api.app import create_app
    from api.auth import load_credentials
    from api.connection_guard import configure, uvicorn_options
    from api.logs import config as log_config
    from api.logs import log_format
    from api.malloc import limit_arenas
    from api.serve import WORKER_APP, WORKER_HEALTHCHECK_SECONDS, metrics_dir, workers_refused
    from api.shutdown import ClosingServer

    limit_arenas()  # before any thread starts (api.malloc)
    os.environ.setdefault("CROUPIER_GC_TUNED", "true")  # each worker's (ledger.gc_policy)

    settings = Settings()
    refused = workers_refused(settings, args.workers)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    try:
        credentials = load_credentials(settings)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        lock = None if settings.uses_postgres or args.workers > 1 else hold_data_dir(settings)
        sock = listen(args.host, args.port) if args.workers == 1 else None
    except StartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:  # open the store once first, so a start-up error is one clear line
        Casino(settings).close()
    except KeyringError:
        raise
    except Exception as e:
        print(f"error: croupier serve cannot start: {_cause(e)}", file=sys.stderr)
        return 2
    store = "PostgreSQL" if settings.uses_postgres else f"SQLite in {settings.data_dir}"
    print(f"croupier serve: {store}, http://{args.host}:{args.port} (docs at /docs)")
    # The reference browser client (issue 24): a newcomer finds it from the first screen.
    print(f"browser client: http://{args.host}:{args.port}/play/#token=<session token>")
    print(f"operator and auditor tokens: {credentials.tokens_from}")
    print(f"session-token secret: {credentials.secret_from}")
    admission = configure(settings)  # api/connection_guard.py: deadlines and connection caps
    print(
        f"connections: at most {admission.cap} per process, "
        f"{admission.per_address_cap} per address; proxies trusted: "
        + (", ".join(settings.trusted_proxies) or "none"),
        flush=True,
    )
    # JSON lines or text (api/logs.py), secrets redacted, applied in every worker process.
    log_setup = log_config(
        settings,
        [credentials.operator_token, credentials.auditor_token],
        access=not args.no_access_log,
    )
    access_log = not args.no_access_log and log_format(settings) == "text"
    if args.workers > 1:  # each worker process builds its own application (api.serve)
        print(f"workers: {args.workers} processes, each with its own writer", flush=True)
        print(f"metrics of every worker (GET /metrics) via {metrics_dir()}", flush=True)
        uvicorn.run(
            WORKER_APP,
            factory=True,
            workers=args.workers,
            timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            log_config=log_setup,
            access_log=access_log,
            **uvicorn_options(settings),
        )
        return 0
    app = create_app(settings=settings, credentials=credentials)
    config = uvicorn.Config(
        app,
        log_level=args.log_level,
        log_config=log_setup,
        access_log=access_log,
        # Streams end at once on shutdown (ClosingServer); other requests get this long.
        timeout_graceful_shutdown=5,
        **uvicorn_options(settings),
    )
    assert sock is not None
    try:
        ClosingServer(config, app).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled (as uvicorn.run does, ignore it)
    finally:
        if lock is not None:
            lock.close()
    return 0


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything starts: a taken port is one line and
    exit 2, not uvicorn's own error lines."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise StartError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    sock.set_inheritable(True)
    return sock


def hold_data_dir(settings: Settings) -> Any:
    """One ``croupier serve`` per SQLite data directory: an exclusive lock on
    ``DATA_DIR/serve.lock`` held while the server runs (SQLite is one process's store)."""
    import fcntl

    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = settings.data_dir / "serve.lock"
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise StartError(
            f"another croupier serve already uses {settings.data_dir} (pid {holder}); "
            "one server per SQLite data directory"
        ) from e
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


class StartError(Exception):
    """Why ``croupier serve`` cannot start: printed as one line, exit 2."""


def cmd_db_init(args: argparse.Namespace) -> int:
    """Create the PostgreSQL schema as its owner; grant the application role the least."""
    from api.dbinit import DbInitError, init_db

    url = args.owner_url or Settings().database_url
    if not url:
        print("error: pass --owner-url or set CROUPIER_DATABASE_URL", file=sys.stderr)
        return 2
    try:
        print(json.dumps(init_db(url, args.app_role)))
    except (DbInitError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a database error: one clear line, no traceback
        print(f"error: croupier db init failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


def _cause(e: BaseException) -> str:
    """The innermost cause of an error, on one line."""
    while e.__cause__ is not None:
        e = e.__cause__
    return f"{type(e).__name__}: {e}".replace("\n", " ")


def cmd_table_run(args: argparse.Namespace) -> int:
    """Run the live blackjack table's runner on the configured store (system clock): every
    window closes on time, rounds follow one another. ``--create CURRENCY`` creates the
    table with the default configuration first; ``--ticks N`` stops after N ticks."""
    import time

    from ledger.errors import LedgerError
    from ledger.tables.commands import CreateTable
    from ledger.tables.errors import TableExists
    from ledger.tables.runner import TableRunner, run_forever

    app = bootstrap(Settings())
    try:
        if args.create:
            with contextlib.suppress(TableExists):
                app.command(f"create-table-{args.table}", CreateTable(args.table, args.create, {}))
        runner = TableRunner(app, args.table, lambda: datetime.now(UTC))
        ticks = iter(range(args.ticks)) if args.ticks else None

        def stop() -> bool:
            return ticks is not None and next(ticks, None) is None

        try:
            done = run_forever(runner, args.interval, stop, time.sleep)
        except KeyboardInterrupt:
            done = -1
        except LedgerError as e:
            print(f"error: {e.message}", file=sys.stderr)
            return 1
        print(json.dumps({"table": args.table, "actions": done}))
    finally:
        app.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="croupier", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="play a scripted session and seal a checkpoint")
    d.add_argument(
        "--tag",
        default=None,
        help="request-id prefix: the same tag replays that run (idempotent); "
        "default: a new run, i.e. a new session, each time",
    )
    d.set_defaults(func=cmd_demo)
    sub.add_parser("seal", help="write a signed checkpoint now").set_defaults(func=cmd_seal)
    vf = sub.add_parser(
        "verify", help="verify the log against its genesis key; the result goes in the log"
    )
    vf.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
    vf.set_defaults(func=cmd_verify)
    vd = sub.add_parser(
        "void", help="void a round after a malfunction (refunds its stakes, reverses its win)"
    )
    vd.add_argument("code", help="the round's game code")
    vd.add_argument("--reason", required=True, help="why the round is voided (recorded)")
    vd.add_argument("--incident", required=True, help="incident id")
    vd.add_argument("--request-id", help="idempotency key (default: void:CODE)")
    vd.add_argument("--json", action="store_true", help="machine-readable output")
    vd.set_defaults(func=cmd_void)
    sub.add_parser("rotate-keys", help="new signing key; old public keys kept").set_defaults(
        func=cmd_rotate_keys
    )
    sv = sub.add_parser("serve", help="run the HTTP API (FastAPI + uvicorn)")
    sv.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    sv.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    sv.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    sv.add_argument("--no-access-log", action="store_true", help="no line per request")
    sv.add_argument("--cells", help="serve every cell of this cell map (cells.json) on one address")
    sv.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (default 1; more than one needs PostgreSQL)",
    )
    sv.set_defaults(func=cmd_serve)
    add_wallet_sim(sub)
    add_cells(sub)
    add_projections(sub)
    db = sub.add_parser("db", help="database administration (PostgreSQL)")
    dbsub = db.add_subparsers(dest="db_command", required=True)
    di = dbsub.add_parser(
        "init", help="as the owner role: create schema, tables, triggers; grant the app role"
    )
    di.add_argument("--app-role", required=True, help="the role `croupier serve` runs as")
    di.add_argument(
        "--owner-url",
        help="postgresql://owner@host/db?schema=NAME (default CROUPIER_DATABASE_URL)",
    )
    di.set_defaults(func=cmd_db_init)
    tb = sub.add_parser("table", help="live Infinite Blackjack tables")
    tsub = tb.add_subparsers(dest="table_command", required=True)
    tr = tsub.add_parser("run", help="run a table's runner until interrupted")
    tr.add_argument("table", help="the table id")
    tr.add_argument("--interval", type=float, default=0.2, help="seconds between ticks")
    tr.add_argument("--create", metavar="CURRENCY", help="create the table first if missing")
    tr.add_argument("--ticks", type=int, default=0, help="stop after this many ticks")
    tr.set_defaults(func=cmd_table_run)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyringError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SETTINGS_ERRORS as e:
        print(f"error: {settings_problem(e)}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
