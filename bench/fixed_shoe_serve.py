"""``croupier serve`` with every seed drawn as ``BENCH_SHOE_SEED`` (64 hex digits): a
bench's server only, so that two servers (two trees) deal a table the same shoe and their
runs compare. Run as a script, with the server's tree on ``PYTHONPATH``
(``bench/bench_table_http.py --shoe-seed``); it replaces the seed source of the
application ``croupier serve`` builds in this process, so it works with one worker only.
A server that players use never runs this: its seeds come from the OS (DESIGN §1.4).

    BENCH_SHOE_SEED=<hex> PYTHONPATH=<tree> python bench/fixed_shoe_serve.py serve ...
"""

from __future__ import annotations

import functools
import os
import sys

import api.app
from api.cli import main
from ledger.bootstrap import bootstrap

SEED = bytes.fromhex(os.environ.pop("BENCH_SHOE_SEED"))
if len(SEED) != 32:
    raise SystemExit("BENCH_SHOE_SEED: 64 hex digits (256 bits)")
if "--workers" in sys.argv and sys.argv[sys.argv.index("--workers") + 1] != "1":
    raise SystemExit("a fixed shoe needs one worker: the others would build their own")
api.app.bootstrap = functools.partial(bootstrap, seed_source=lambda: SEED)  # type: ignore[attr-defined]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
