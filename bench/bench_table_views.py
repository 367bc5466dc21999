"""Benchmark: what a live table's readers cost per seat while a step is open, kept state
against the per-request replay it replaced, in the same run.

One round of N seats (SQLite, in-process, fake clock; every seat a main bet, the runner
deals, half the seats decide in the first window). Then, alternating, ``--repeats``
times, with this process's CPU time (``process_time``):

- statistics: the decision statistics of the open window as every seat's table state
  asks for them (``session_view``): a replay of every seat of the round per request
  (``replayed_statistics``, the code before) against the counts kept per round
  (``LiveStatistics``: one replay per round version, then the seats that changed);
  timed for ``--asks`` requests, given per request;
- options: the ``options`` message of every seat after a window (the stream's fan-out):
  each seat's replay building the round's shared states again (the code before) against
  one set of shared states for all of them.

Prints the CPU per request / per seat of each, the ratio, and the spread over repeats.

    PYTHONPATH=. python bench/bench_table_views.py [--repeats 3] [--asks 50] [SEATS ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_table import CONFIG, TABLE, Clock, choice, current, players, sqlite_app

from api.table_messages import TableFold, options_message
from ledger.keys import Keyring
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableSeat, seat_id_for
from ledger.tables.config import rules_of
from ledger.tables.context import RoundStates
from ledger.tables.runner import TableRunner
from ledger.tables.views import LiveStatistics, replayed_statistics


def cpu(fn: Any) -> float:
    c = time.process_time()
    fn()
    return time.process_time() - c


def spread(xs: list[float]) -> str:
    return f"{min(xs) * 1e3:.3f}-{max(xs) * 1e3:.3f}"


def run(seats: int, repeats: int, asks: int, ring: Keyring) -> None:
    clock = Clock()
    with sqlite_app(ring, clock, 512) as app:
        app.command("table", tc.CreateTable(TABLE, "EUR", dict(CONFIG)))
        sessions = players(app, seats, 16)
        runner = TableRunner(app, TABLE, clock)
        runner.tick()
        for i, s in enumerate(sessions):
            app.command(f"b{i}", tc.PlaceBet(s, TABLE, "main", 1_000))
        clock.now += timedelta(milliseconds=CONFIG["betting_ms"])
        runner.tick(max_actions=1)
        rnd = current(app)
        step = rnd.step if rnd.phase == "step" else 0
        states = RoundStates(rnd, rules_of(rnd.config))
        for i, s in enumerate(sessions[: seats // 2]):
            record = app.find(TableSeat, seat_id_for(rnd.id, s))
            assert record is not None
            wanted = choice(rnd, record, states)
            if wanted is not None:
                app.command(f"k{i}", tc.TableDecide(s, TABLE, step, wanted))
        rnd = current(app)
        records = [app.find(TableSeat, seat_id_for(rnd.id, s)) for s in sessions]
        fold = TableFold(app, TABLE)
        replay_s: list[float] = []
        kept_s: list[float] = []
        old_opt: list[float] = []
        new_opt: list[float] = []
        for _ in range(repeats):
            replay_s.append(
                cpu(
                    lambda: [replayed_statistics(app, TABLE, rnd.number, step) for _ in range(asks)]
                )
                / asks
            )
            live = LiveStatistics(app)  # nothing kept: the first request builds
            kept_s.append(
                cpu(lambda live=live: [live.counts(rnd, step) for _ in range(asks)]) / asks
            )
            fresh = replayed_statistics(app, TABLE, rnd.number, step)
            assert sum(sum(r["counts"].values()) for r in fresh) == sum(
                sum(c.values()) for c in live.counts(rnd, step).values()
            )
            old_opt.append(cpu(lambda: [options_message(rnd, r) for r in records]) / seats)
            fold._states = None
            new_opt.append(
                cpu(lambda: [options_message(rnd, r, fold.states_of(rnd)) for r in records]) / seats
            )
        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"{seats} seats, window {step} ({rnd.phase}), {repeats} repeats (load {load}):")
        print(
            f"  statistics per request: replay {spread(replay_s)} ms, kept {spread(kept_s)} ms"
            f" (ratio {min(replay_s) / max(kept_s):.0f}-{max(replay_s) / min(kept_s):.0f}x)"
        )
        print(
            f"  options per seat: per-seat states {spread(old_opt)} ms, shared {spread(new_opt)} ms"
            f" (ratio {min(old_opt) / max(new_opt):.1f}-{max(old_opt) / min(new_opt):.1f}x)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seats", nargs="*", type=int, default=[100, 1_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--asks", type=int, default=50)
    args = ap.parse_args()
    ring = Keyring.generate()
    for n in args.seats:
        run(n, args.repeats, args.asks, ring)


if __name__ == "__main__":
    main()
