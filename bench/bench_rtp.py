"""Certification simulation benchmark: observed RTP with 99 % intervals, and speed.

Usage::

    .venv/bin/python bench/bench_rtp.py [--vp-rounds 200000] [--rd-rounds 400000]
        [--ledger-rounds 2000] [--jobs 2] [--master TEXT]

(a) engine level (``games.simulate``): every variant and way of play, rounds seeded by
    ``HMAC-SHA256(master, i)``; split over ``--jobs`` processes by seed index, so the
    figures do not depend on the number of jobs;
(b) ledger level (``ledger.simulate``): ``--ledger-rounds`` rounds through the signed,
    committed Casino commands on a temporary SQLite store, checked equal to the engine
    level and to ``audit-cli rtp``'s reading of the log;
(c) how many rounds each one-unit paytable typo would need to be caught (99.9 %
    confidence, 99.9 % power), from the exact variances.

Intervals: normal approximation with the exact per-round variance (games.rtp). Wall and
CPU seconds are both printed: on a shared machine the wall clock also counts waiting.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import NormalDist

from games.poker import HandRank
from games.rtp import Tally, video_poker_reference, z_score
from games.simulate import (
    Plan,
    Play,
    RaisePolicy,
    RedDogPlan,
    VideoPokerPlan,
    intervals,
    references,
    simulate,
    simulate_all,
)
from games.video_poker.paytable import JACKS_OR_BETTER_9_6 as JB
from games.video_poker.paytable import Paytable


def plans(vp_rounds: int, rd_rounds: int) -> list[Plan]:
    return [
        VideoPokerPlan("jb-4line", 1, 4, vp_rounds),
        VideoPokerPlan("jb-4line", 5, 4, vp_rounds),
        VideoPokerPlan("jb-4line", 1, 4, vp_rounds, play=Play.WINNING_CARDS),
        VideoPokerPlan("jb-multi", 1, 5, vp_rounds),
        VideoPokerPlan("jb-multi", 5, 1, vp_rounds),
        RedDogPlan(rd_rounds, RaisePolicy.OPTIMAL),
        RedDogPlan(rd_rounds, RaisePolicy.NEVER),
    ]


def _chunk(args: tuple[Plan, bytes, int]) -> tuple[Tally, float]:
    plan, master, start = args
    c0 = time.process_time()
    return simulate(plan, master, start), time.process_time() - c0


def run_plan(plan: Plan, master: bytes, start: int, jobs: int) -> tuple[Tally, float, float]:
    """Simulate ``plan`` from seed index ``start``, in ``jobs`` disjoint index ranges."""
    from dataclasses import replace

    t0 = time.perf_counter()
    size = -(-plan.rounds // jobs)
    parts = [
        (replace(plan, rounds=min(size, plan.rounds - k)), master, start + k)
        for k in range(0, plan.rounds, size)
    ]
    tally, cpu = Tally(), 0.0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for part, seconds in pool.map(_chunk, parts):
            tally.merge(part)
            cpu += seconds
    return tally, time.perf_counter() - t0, cpu


def report(plan: Plan, tally: Tally) -> None:
    for measure, interval in intervals(plan, tally, 0.99).items():
        theory = references(plan)[measure].rtp
        print(
            f"  {measure:<10} observed {float(interval.observed):.4%}  "
            f"99% CI [{interval.low:.4%}, {interval.high:.4%}]  "
            f"theory {float(theory):.4%}  inside={interval.contains(theory)}"
        )


def engine_level(args: argparse.Namespace, master: bytes) -> None:
    print(f"(a) engine level, master seed {args.master!r}, {args.jobs} job(s)")
    start = 0
    for plan in plans(args.vp_rounds, args.rd_rounds):
        tally, wall, cpu = run_plan(plan, master, start, args.jobs)
        start += plan.rounds
        print(
            f"{plan.label}: {plan.rounds:,} rounds, wall {wall:.1f} s, "
            f"CPU {cpu / plan.rounds * 1e6:.0f} us/round"
        )
        report(plan, tally)


def ledger_level(rounds: int, master: bytes) -> None:
    from audit_cli.rtp import read_groups
    from ledger.keys import Keyring
    from ledger.settings import Settings
    from ledger.simulate import open_casino, simulate_on_ledger

    each = rounds // 5
    chosen: list[Plan] = [
        VideoPokerPlan("jb-4line", 1, 4, each),
        VideoPokerPlan("jb-4line", 2, 4, each, play=Play.WINNING_CARDS),
        VideoPokerPlan("jb-multi", 5, 3, each),
        RedDogPlan(rounds - 4 * each, RaisePolicy.NEVER),
        RedDogPlan(each, RaisePolicy.OPTIMAL, bet=500),
    ]
    print(f"(b) ledger level: {sum(p.rounds for p in chosen):,} rounds through the Casino")
    with tempfile.TemporaryDirectory() as tmp:
        app = open_casino(Settings(data_dir=Path(tmp)), Keyring.generate(), master)
        t0 = time.perf_counter()
        try:
            tallies = simulate_on_ledger(app, chosen)
        finally:
            app.close()
        wall = time.perf_counter() - t0
        same = tallies == simulate_all(chosen, master)
        groups, problems = read_groups(str(Path(tmp) / "casino.sqlite"))
        merged = Tally()
        for g in groups:
            merged.merge(g.tally)
        total = Tally()
        for t in tallies:
            total.merge(t)
        log_ok = (merged.staked, merged.paid, merged.rounds) == (
            total.staked,
            total.paid,
            total.rounds,
        )
    print(
        f"  wall {wall:.1f} s ({wall / total.rounds * 1e3:.1f} ms/round); equal to engine "
        f"level: {same}; audit-cli rtp totals equal: {log_ok and not problems}"
    )
    for plan, tally in zip(chosen, tallies, strict=True):
        print(f"{plan.label}: {plan.rounds} rounds, staked {tally.staked}, paid {tally.paid}")
        report(plan, tally)


def typo_power() -> None:
    print("(c) rounds of jb-4line (1 coin, 4 lines, optimal) to catch a one-unit typo")
    need = z_score(0.999) + NormalDist().inv_cdf(0.999)
    real = video_poker_reference(JB, 1)
    for rank in (r for r in HandRank if r is not HandRank.NOTHING):
        pays = {r: list(c) for r, c in JB.pays.items()}
        pays[rank][0] -= 1
        typo = video_poker_reference(
            Paytable(f"typo-{rank}", {r: tuple(c) for r, c in pays.items()}), 1
        )
        shift = abs(float(typo.rtp - real.rtp))
        rounds = (need / shift) ** 2 * float(typo.round_variance(4))
        print(
            f"  {rank.value:<16} {JB.payout(rank, 1)} -> {JB.payout(rank, 1) - 1}: "
            f"RTP moves {shift:.4%}, needs {rounds:,.0f} rounds"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--vp-rounds", type=int, default=200_000)
    p.add_argument("--rd-rounds", type=int, default=400_000)
    p.add_argument("--ledger-rounds", type=int, default=2_000)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--master", default="croupier/bench/rtp/v1")
    args = p.parse_args()
    master = args.master.encode()
    engine_level(args, master)
    if args.ledger_rounds:
        ledger_level(args.ledger_rounds, master)
    typo_power()


if __name__ == "__main__":
    main()
