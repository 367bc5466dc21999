"""``croupier serve --cells cells.json`` and ``croupier cells seal``: the cells of a map on
one HTTP address, and a checkpoint of every cell with a freshly signed index."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from types import FrameType
from typing import Any

from cells import cellmap
from cells.deployment import Cells
from ledger.keys import KeyringError
from ledger.settings import Settings


def serve_cells(args: argparse.Namespace) -> int:
    """Run every cell of the map behind one address until interrupted."""
    import uvicorn

    from api.auth import load_credentials
    from api.connection_guard import configure, uvicorn_options
    from api.logs import config as log_config
    from api.logs import log_format
    from cells.router import CellRouter

    os.environ.setdefault("CROUPIER_GC_TUNED", "true")  # a server's collector (ledger.gc_policy)
    settings = Settings()
    try:
        cells_map = cellmap.load(args.cells)
        credentials = load_credentials(settings)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:  # open every cell once first, so a start-up error is one clear line
        Cells(cells_map, settings).close()
    except KeyringError:
        raise
    except Exception as e:
        print(
            f"error: croupier serve --cells cannot start: {type(e).__name__}: {e}", file=sys.stderr
        )
        return 2
    print(
        f"croupier serve: {len(cells_map.cells)} cells ({', '.join(cells_map.names)}), "
        f"http://{args.host}:{args.port}; index of tree heads in {cells_map.index_path}"
    )
    print(f"operator and auditor tokens: {credentials.tokens_from}")
    configure(settings)  # api/connection_guard.py: deadlines and connection caps
    router = CellRouter(lambda: Cells(cells_map, settings), settings, credentials)
    secrets = [credentials.operator_token, credentials.auditor_token]
    config = uvicorn.Config(
        router,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        log_config=log_config(settings, secrets, access=not args.no_access_log),
        access_log=not args.no_access_log and log_format(settings) == "text",
        # Table streams end at once on shutdown (_ClosingCells); other requests get this long.
        timeout_graceful_shutdown=5,
        **uvicorn_options(settings),
    )

    class ClosingCells(uvicorn.Server):
        """``api.shutdown.ClosingServer`` for the router: on Ctrl-C or SIGTERM every
        cell's table streams and sockets end first, cleanly (they never end by themselves)."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            router.close_streams()
            super().handle_exit(sig, frame)

    # uvicorn re-raises the Ctrl-C it handled (as uvicorn.run does, ignore it)
    with contextlib.suppress(KeyboardInterrupt):
        ClosingCells(config).run()
    return 0


def cmd_cells_seal(args: argparse.Namespace) -> int:
    try:
        cells_map = cellmap.load(args.cells)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cells = Cells(cells_map, Settings())
    try:
        doc: dict[str, Any] = cells.seal()
    finally:
        cells.close()
    print(json.dumps(doc, indent=2))
    return 0


def add_cells(sub: Any) -> None:
    cp = sub.add_parser("cells", help="a partitioned deployment (cells.json)")
    csub = cp.add_subparsers(dest="cells_command", required=True)
    seal = csub.add_parser("seal", help="checkpoint every cell and sign the index of their heads")
    seal.add_argument("--cells", required=True, help="the cell map (cells.json)")
    seal.set_defaults(func=cmd_cells_seal)
