"""Video poker maths benchmark: optimal-hold latency and full-cycle analysis from cold.

Usage: ``.venv/bin/python bench/bench_video_poker.py [--deals 20000]``

(a) ``optimal_hold`` per hand: start-up (building the subset-count tables), then p50 /
    p99 / max over random deals, 5 coins on the 9/6 paytable.
(b) the exact full cycle from a cold start, each in a fresh interpreter (imports,
    tables and deal classes included, nothing cached): one coin column, and all five.
Wall and CPU seconds are both printed: on a shared machine the wall clock also counts
time spent waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_COLD = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
from games.video_poker.math import analyse, analyse_all_columns, deal_classes
from games.video_poker.paytable import JACKS_OR_BETTER_9_6
from games.video_poker.strategy import prepare
t_import = time.perf_counter()
columns = {columns!r}
if columns == "one":
    results = {{5: analyse(JACKS_OR_BETTER_9_6, 5)}}
else:
    results = analyse_all_columns(JACKS_OR_BETTER_9_6)
t_end, c_end = time.perf_counter(), time.process_time()
print(json.dumps({{
    "wall": t_end - t0, "cpu": c_end - c0, "import": t_import - t0,
    "rtp": {{c: str(a.rtp_decimal) for c, a in results.items()}},
}}))
"""


def bench_optimal_hold(deals: int) -> None:
    from games.cards import full_deck
    from games.video_poker.paytable import JACKS_OR_BETTER_9_6
    from games.video_poker.strategy import optimal_hold, prepare

    t0, c0 = time.perf_counter(), time.process_time()
    prepare()
    startup, startup_cpu = time.perf_counter() - t0, time.process_time() - c0
    rng = random.Random(20_000)
    hands = [rng.sample(full_deck(), 5) for _ in range(deals)]
    for hand in hands[:200]:  # warm the small caches (paytable vector, position maps)
        optimal_hold(hand, JACKS_OR_BETTER_9_6, 5)
    wall, cpu = [], []
    for hand in hands:
        t, c = time.perf_counter_ns(), time.thread_time_ns()
        optimal_hold(hand, JACKS_OR_BETTER_9_6, 5)
        cpu.append(time.thread_time_ns() - c)
        wall.append(time.perf_counter_ns() - t)
    for label, ns in (("wall", wall), ("cpu", cpu)):
        ns.sort()
        p50, p99 = ns[len(ns) // 2] / 1e3, ns[int(len(ns) * 0.99)] / 1e3
        print(
            f"optimal_hold ({label}) p50={p50:.0f} µs p99={p99:.0f} µs max={ns[-1] / 1e3:.0f} µs"
            f" startup={startup:.3f} s (cpu {startup_cpu:.3f} s) over {deals} deals"
        )


def bench_cold_cycle(columns: str) -> None:
    code = _COLD.format(columns=columns)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout)
    label = "one column (5 coins)" if columns == "one" else "all five columns"
    rtps = " ".join(f"{c}c={v}" for c, v in r["rtp"].items())
    print(
        f"full_cycle cold {label}: wall={r['wall']:.3f} s cpu={r['cpu']:.3f} s "
        f"(imports {r['import']:.3f} s) rtp {rtps}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="cold full-cycle runs each")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    bench_optimal_hold(args.deals)
    for columns in ("one", "all"):
        for _ in range(args.repeat):
            bench_cold_cycle(columns)


if __name__ == "__main__":
    main()
