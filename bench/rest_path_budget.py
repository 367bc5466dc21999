"""The REST path's share of a table command on the event loop's thread, from the py-spy
profiles of ``bench/bench_table_http.py --mode sse --profile DIR`` (docs/performance/
table-command-budget.md, "Why SSE + REST was slower").

``bench/table_budget.py`` counts everything the event loop's thread does as "other"; this
sorts the event loop's samples by the innermost frame that names an HTTP layer (uvicorn,
FastAPI's and Starlette's routing, FastAPI's dependency solving, the front, the request
log, the metrics, the guard, ...). A stack holding 5 % or more of a profile's samples is
set apart first (a stall: one line cannot cost that, see PILEUP in table_budget.py), and
the phase's measured CPU is shared out by the samples left, per command:

    python bench/rest_path_budget.py PROFILE CPU_S COMMANDS [PROFILE CPU_S COMMANDS ...]

(a profile may be gzipped). Nothing here measures: it divides what py-spy sampled and
what /proc counted.
"""

from __future__ import annotations

import argparse
import gzip
from collections import Counter
from pathlib import Path

LAYERS = [
    ("api/table_stream.py", "SSE stream send"),
    ("api/table_feed.py", "SSE stream send"),
    ("api/table_intake.py", "intake submit and answer"),
    ("api/tables.py", "table route"),
    ("fastapi/dependencies", "FastAPI routing and dependency solving"),
    ("fastapi/routing.py", "FastAPI routing and dependency solving"),
    ("starlette/routing.py", "FastAPI routing and dependency solving"),
    ("starlette/_exception_handler", "FastAPI routing and dependency solving"),
    ("starlette/middleware/exceptions", "FastAPI routing and dependency solving"),
    ("fastapi/middleware", "FastAPI routing and dependency solving"),
    ("api/fast_route.py", "front (api/front.py, api/fast_route.py)"),
    ("api/front.py", "front (api/front.py, api/fast_route.py)"),
    ("pydantic", "pydantic"),
    ("api/logs.py", "request log"),
    ("api/metrics.py", "HTTP metrics"),
    ("prometheus_client", "HTTP metrics"),
    ("api/limits.py", "guard"),
    ("api/position.py", "log position"),
    ("api/auth.py", "authentication"),
    ("uvicorn/", "uvicorn (parse, answer)"),
    ("api/connection_guard", "uvicorn (parse, answer)"),
]
"""(frame text, layer): the innermost frame that matches names the sample's layer."""
NOT_HTTP = {"SSE stream send", "intake submit and answer", "other"}
LOOP = "_run_module_as_main"
"""The event loop's thread: its outermost frame (the server's main thread)."""


def stacks(path: Path) -> Counter[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    out: Counter[str] = Counter()
    with opener(path, "rt") as f:
        for line in f:
            stack, _, n = line.rstrip().rpartition(" ")
            if stack:
                out[stack] += int(n)
    return out


def layer(frames: list[str]) -> str:
    for frame in reversed(frames):
        for text, name in LAYERS:
            if text in frame:
                return name
    return "other"


def budget(path: Path, cpu_s: float, commands: int) -> dict[str, float]:
    """Microseconds of the server's CPU per command, by layer (and the rest apart)."""
    found = stacks(path)
    total = sum(found.values())
    piled = {s for s, n in found.items() if n >= 0.05 * total}
    kept = total - sum(found[s] for s in piled)
    samples: Counter[str] = Counter()
    for stack, n in found.items():
        if stack in piled:
            continue
        frames = stack.split(";")
        samples["not the event loop" if not frames[0].startswith(LOOP) else layer(frames)] += n
    scale = 1e6 * cpu_s / kept / commands
    out = {name: n * scale for name, n in samples.most_common()}
    out["event loop's HTTP path"] = sum(
        us for name, us in out.items() if name not in NOT_HTTP | {"not the event loop"}
    )
    out["samples"], out["set apart (stalls)"] = total, total - kept
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="PROFILE CPU_S COMMANDS, repeated")
    args = ap.parse_args()
    if len(args.runs) % 3:
        ap.error("give PROFILE CPU_S COMMANDS for each profile")
    for i in range(0, len(args.runs), 3):
        path, cpu, n = Path(args.runs[i]), float(args.runs[i + 1]), int(args.runs[i + 2])
        print(f"\n{path.name}: {n} commands, {cpu} s server CPU (us per command)")
        for name, us in budget(path, cpu, n).items():
            print(f"  {name:<45} {us:>9,.0f}")


if __name__ == "__main__":
    main()
