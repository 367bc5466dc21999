"""Infinite Blackjack maths benchmark: the exact main game and the whole certification
table, each from a cold start in a fresh interpreter (imports, hand space, dealer tables,
nothing cached).

Usage: ``PYTHONPATH=. .venv/bin/python bench/bench_blackjack_math.py [--repeat 5]``

(a) main game: the composition-dependent optimal return of a fresh 8-deck shoe under one
    reading (all-bets), from ``import`` to the figure. Goal: <= 1 s.
(b) whole table: both readings (optimal, the basic-strategy chart and its return, the
    hit-hard-17 variant), insurance, the four side bets, the cash-out table and its two
    returns (:func:`games.blackjack.certify.certification`). Goal: <= 10 s.
Wall and CPU seconds are printed per repeat, then min / median / max: on a shared machine
the wall clock also counts time spent waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_MAIN = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
from games.blackjack.math import main_game
game = main_game(True)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "figure": f"{game.rtp * 100:.4f} %"}))
"""

_TABLE = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
from games.blackjack.certify import certification, certification_rows
rows = certification_rows(certification())
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "figure": f"{len(rows)} rows"}))
"""


def cold(code: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def report(name: str, goal: float, runs: list[dict[str, object]]) -> None:
    walls = [float(str(r["wall"])) for r in runs]
    cpus = [float(str(r["cpu"])) for r in runs]
    print(
        f"{name}: {runs[0]['figure']}; wall min {min(walls):.2f} s, median "
        f"{statistics.median(walls):.2f} s, max {max(walls):.2f} s; cpu min {min(cpus):.2f} s, "
        f"max {max(cpus):.2f} s (goal <= {goal:g} s: "
        f"{'met' if statistics.median(walls) <= goal else 'NOT met'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name, code, goal in (("main game", _MAIN, 1.0), ("whole table", _TABLE, 10.0)):
        runs = []
        for i in range(args.repeat):
            runs.append(cold(code))
            print(
                f"  {name} run {i + 1}: wall {runs[-1]['wall']:.2f} s, cpu {runs[-1]['cpu']:.2f} s"
            )
        report(name, goal, runs)


if __name__ == "__main__":
    main()
