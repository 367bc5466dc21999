"""Benchmark: one cell vs two cells on this machine's one PostgreSQL server, in process.

Each cell is a whole croupier application (``cells.deployment.Cells``) on its own schema
with its own keys, log and group-commit writer. ``CLIENTS`` threads play Red Dog (bet,
then see if the round is open), each on its own session; a client's player is in the
cell the map's rule gives it (so with two cells about half the clients write to each).
Prints, per repetition and side by side, rounds/s and commands/s with 1 and with 2 cells,
the rounds/s of each cell, the ratio 2 cells / 1 cell, and the load average.

Both cells share this machine's cores and its one PostgreSQL server: this measures what a
second writer and a second table lock buy on the same hardware, not a second machine.

    python bench/bench_cells.py [SECONDS] [REPEATS]   # default 5 s, 3 repeats
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_group_commit import PG, drop_schema, new_schema, red_dog_round

from cells import cellmap
from cells.deployment import Cells
from ledger.keys import Keyring
from ledger.settings import Settings

CLIENTS = 50


def run(n_cells: int, seconds: float) -> tuple[float, float, dict[str, float]]:
    """(rounds/s, commands/s, rounds/s per cell) of CLIENTS clients over n_cells cells."""
    schemas = [new_schema() for _ in range(n_cells)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cells.json"
        path.write_text(
            json.dumps(
                {
                    "cells": [
                        {"name": f"c{i}", "database_url": f"{PG}?schema={s}"}
                        for i, s in enumerate(schemas)
                    ]
                }
            )
        )
        os.environ.setdefault("POSTGRES_POOL_SIZE", str(CLIENTS + 10))
        m = cellmap.load(path)
        cells = Cells(
            m, Settings(data_dir=Path(d)), keyrings={c.name: Keyring.generate() for c in m.cells}
        )
        try:
            tag = uuid.uuid4().hex[:6]
            players = [f"p{tag}{i}" for i in range(CLIENTS)]
            sids = []
            for p in players:
                app = cells.app_for(p)
                app.open_account(f"a{p}", p, "EUR")
                app.deposit(f"d{p}", p, 10**12)
                sids.append(app.open_session(f"s{p}", p, 10**11).session_id)
            counts = [(0, 0)] * CLIENTS
            barrier = threading.Barrier(CLIENTS + 1)
            end = [0.0]

            def client(i: int) -> None:
                app, rounds, commands = cells.app_for(players[i]), 0, 0
                barrier.wait()
                while time.perf_counter() < end[0]:
                    commands += red_dog_round(app, sids[i], f"{tag}-{i}-{rounds}")
                    rounds += 1
                counts[i] = (rounds, commands)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
            for t in threads:
                t.start()
            start = time.perf_counter()
            end[0] = start + seconds
            barrier.wait()
            for t in threads:
                t.join()
            took = time.perf_counter() - start
            per_cell: dict[str, float] = {c.name: 0.0 for c in m.cells}
            for p, (r, _) in zip(players, counts, strict=True):
                per_cell[m.cell_for(p).name] += r / took
            return (
                sum(r for r, _ in counts) / took,
                sum(c for _, c in counts) / took,
                per_cell,
            )
        finally:
            cells.close()
            for s in schemas:
                drop_schema(s)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(
        f"{CLIENTS} clients, Red Dog, {seconds:g} s per run, {repeats} repeats, "
        f"{os.cpu_count()} cores"
    )
    ratios, one, two = [], [], []
    for rep in range(repeats):
        load = os.getloadavg()[0]
        r1, c1, _ = run(1, seconds)
        r2, c2, per = run(2, seconds)
        one.append(r1)
        two.append(r2)
        ratios.append(r2 / r1)
        cells_text = ", ".join(f"{k} {v:,.0f}" for k, v in per.items())
        print(
            f"  run {rep + 1} (load {load:.1f}): 1 cell {r1:,.0f} rounds/s {c1:,.0f} commands/s; "
            f"2 cells {r2:,.0f} rounds/s {c2:,.0f} commands/s ({cells_text}); "
            f"ratio {r2 / r1:.2f}"
        )
    print(
        f"1 cell: median {statistics.median(one):,.0f} rounds/s ({min(one):,.0f}-{max(one):,.0f}); "
        f"2 cells: median {statistics.median(two):,.0f} ({min(two):,.0f}-{max(two):,.0f}); "
        f"ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}); "
        f"load now {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
