"""A server's CPU per round by part of the request path, from a py-spy profile.

Record the server under load (``bench/bench_http.py`` starts it; find its pid)::

    py-spy record --gil -r 100 -d 15 -f raw -o server.txt --pid PID

(``--gil``: only the thread holding the GIL is sampled, so a sample is Python CPU time
and a thread waiting on a lock or the database counts nothing), then::

    python bench/profile_budget.py server.txt [--cpu-ms 8.9] [--top 25]

Each sample goes to one part: a background worker by its thread's root (the read side's
views, the sealer's checkpoints, the live tables, the metrics sampler, the start-up
catalogue), else the request path's part of its innermost frame that names one (edge,
authentication, validation, hand-off, command, engine, events, encoding, signing, store).
With ``--cpu-ms`` (the server CPU per round measured in the same run) each share is also
given in ms a round. Prints a markdown table, then the most inclusive functions (the
flame graph in words).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

BACKGROUND = [
    ("read side (views)", ("ledger/readside/runner.py",)),
    ("sealer (checkpoints)", ("Sealer.start",)),
    ("live tables", ("api/table_runners.py",)),
    ("metrics sampler", ("Sampler.start",)),
    ("start-up catalogue", ("api/catalogue.py", "croupier-catalogue")),
]

# (part, substrings of a frame "function (file:line)"); the innermost frame that matches
# any rule names the sample's part.
RULES = [
    ("signing", ("cryptography/", "ledger/keys.py", "seal (ledger/envelope.py", "sign (")),
    (
        "encoding",
        (
            "json/encoder.py",
            "orjson",
            "Transcoder",
            "eventsourcing/persistence.py",
            "dump_json",
            "serialize_response",
            "jsonable_encoder",
            "ledger/envelope.py",
            "ledger/results.py",
            "round_view (api/schemas.py",
            "_answer (api/game.py",
        ),
    ),
    (
        "store",
        (
            "eventsourcing/sqlite.py",
            "eventsourcing/postgres.py",
            "psycopg",
            "ledger/store.py",
            "sqlite3",
            "eventsourcing/application.py",
            "ledger/snapshots.py",
        ),
    ),
    ("events", ("eventsourcing/domain.py", "eventsourcing/utils.py")),
    ("engine", ("games/",)),
    ("command", ("ledger/",)),
    (
        "hand-off (threads)",
        ("anyio/", "concurrent/futures", "threading.py", "run_in_threadpool", "queue.py"),
    ),
    ("authentication", ("api/auth.py", "hmac.py", "_identify (api/limits.py")),
    (
        "validation",
        ("pydantic", "fastapi/dependencies/", "Plan.values (api/fast_route.py", "json/decoder.py"),
    ),
    ("edge", ("",)),  # anything else: the server, the framework, the middleware, the loop
]
PARTS = [p for p, _ in RULES] + [p for p, _ in BACKGROUND]


def part_of(frames: list[str]) -> str:
    stack = ";".join(frames)
    for part, marks in BACKGROUND:
        if any(m in stack for m in marks):
            return part
    for frame in reversed(frames):
        for part, marks in RULES[:-1]:
            if any(m in frame for m in marks):
                return part
    return "edge"


def read(path: Path) -> list[tuple[list[str], int]]:
    out = []
    for line in path.read_text().splitlines():
        stack, _, n = line.rstrip().rpartition(" ")
        if stack and n.isdigit():
            out.append((stack.split(";"), int(n)))
    return out


def _name(frame: str) -> str:
    """``function (file:line)`` without the line."""
    head, _, rest = frame.partition(" (")
    return f"{head} ({rest.rsplit(':', 1)[0]})" if rest else head


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("profile", type=Path, help="py-spy raw (collapsed) output")
    p.add_argument("--cpu-ms", type=float, help="server CPU per round measured in the run")
    p.add_argument("--top", type=int, default=25, help="inclusive functions listed")
    args = p.parse_args()
    samples = read(args.profile)
    total = sum(n for _, n in samples)
    if not total:
        print("no samples", file=sys.stderr)
        return 1
    parts: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for frames, n in samples:
        parts[part_of(frames)] += n
        for name in {_name(f) for f in frames}:
            inclusive[name] += n
    head = "| part | share of samples |" + (" ms per round |" if args.cpu_ms else "")
    print(head)
    print("|---|---:|" + ("---:|" if args.cpu_ms else ""))
    for part in PARTS:
        share = parts[part] / total
        if not parts[part]:
            continue
        row = f"| {part} | {share * 100:.1f} % |"
        if args.cpu_ms:
            row += f" {share * args.cpu_ms:.2f} |"
        print(row)
    print(f"\n{total} samples. Most inclusive functions:\n")
    for name, n in inclusive.most_common(args.top):
        print(f"- {n / total * 100:5.1f} % `{name}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
