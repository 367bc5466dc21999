"""``croupier wallet-sim``: run the reference operator wallet as its own process."""

from __future__ import annotations

import argparse
import json
import os
import secrets
from pathlib import Path
from typing import Any

from wallet.sim.faults import Fault, FaultPlan


def add_wallet_sim(sub: Any) -> None:
    """Register the ``wallet-sim`` subcommand on croupier's argument parser."""
    w = sub.add_parser("wallet-sim", help="run the reference operator wallet (seamless mode)")
    w.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    w.add_argument("--port", type=int, default=8100, help="port (default 8100)")
    w.add_argument("--db", type=Path, default=Path("wallet-sim.sqlite"), help="balances file")
    w.add_argument(
        "--key-file",
        type=Path,
        default=Path("wallet-sim.key"),
        help="shared HMAC key (text); generated (0600) if missing; env WALLET_SIM_KEY wins",
    )
    w.add_argument("--players", type=Path, help='seed file: [{"token", "currency", "balance"}]')
    w.add_argument("--latency-ms", type=int, default=0, help="added to every call")
    w.add_argument("--hang-ms", type=int, default=2000, help="how long a timeout fault holds")
    for fault in Fault:
        w.add_argument(f"--{fault}-rate", type=float, default=0.0, help=f"share of '{fault}'")
    w.add_argument("--fault-seed", type=int, default=0, help="seed of the random faults")
    w.add_argument("--log-level", default="info", help="uvicorn log level")
    w.set_defaults(func=cmd_wallet_sim)


def load_key(path: Path) -> tuple[bytes, str]:
    """The shared key and where it came from (env, file, or a new file)."""
    if env := os.environ.get("WALLET_SIM_KEY"):
        return env.encode(), "environment WALLET_SIM_KEY"
    if path.exists():
        return path.read_text().strip().encode(), str(path)
    key = secrets.token_hex(32)
    path.touch(mode=0o600)
    path.write_text(key + "\n")
    return key.encode(), f"{path} (new)"


def cmd_wallet_sim(args: argparse.Namespace) -> int:
    import uvicorn

    from wallet.sim.app import create_wallet_app
    from wallet.sim.faults import Faults
    from wallet.sim.store import WalletBooks

    key, key_from = load_key(args.key_file)
    rates = {f: getattr(args, f"{f}_rate".replace("-", "_")) for f in Fault}
    plan = FaultPlan(
        latency_ms=args.latency_ms,
        hang_ms=args.hang_ms,
        rates={f: r for f, r in rates.items() if r},
        seed=args.fault_seed,
    )
    books = WalletBooks(args.db)
    if args.players:
        for p in json.loads(args.players.read_text()):
            books.set_player(p["token"], p["currency"], int(p["balance"]))
    app = create_wallet_app(books, key, Faults(plan))
    print(f"croupier wallet-sim: {args.db}, http://{args.host}:{args.port}, key from {key_from}")
    print(f"faults: {plan.model_dump_json()}")
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        books.close()
    return 0
