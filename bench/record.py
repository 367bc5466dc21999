"""Benchmark records: one JSON line per run, the only source of the docs' benchmark tables.

Every bench calls :func:`record` once per run with the figures it measured. The line is
printed on stdout and appended to ``bench/results/<bench>.jsonl`` (committed), with the
command that produced it, the UTC date, the machine and the load average before and after
the run, so a table in the docs can say where each number came from. Nothing here
measures anything: the bench measures, this writes down what it measured.

Line format (one JSON object)::

    {"bench": "bench_http", "run": "red-dog sqlite workers=1", "command": "python bench/...",
     "date": "2026-12-02T09:10:11Z", "machine": {"cpu": "...", "cores": 2, "python": "3.11.7",
     "system": "Linux 6.1"}, "load": {"before": [0.4, 0.3, 0.2], "after": [1.9, 0.8, 0.4]},
     "figures": {"rounds_per_s": 301.2, "cpu_ms_per_round": 3.3}, "baseline": {...}}

``baseline`` holds the figures of the baseline measured in the same run (a ratio is
only meaningful against a baseline measured beside it on this noisy machine).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


class Run:
    """One run of a bench: note the load when it starts, :meth:`done` writes the record."""

    def __init__(self, bench: str, name: str = "", argv: list[str] | None = None) -> None:
        self.bench = bench
        self.name = name
        self.argv = list(sys.argv if argv is None else argv)
        self.load_before = load()

    def done(
        self,
        figures: Mapping[str, Any],
        baseline: Mapping[str, Any] | None = None,
        *,
        results: Path | None = None,
        quiet: bool = False,
    ) -> dict[str, Any]:
        line: dict[str, Any] = {
            "bench": self.bench,
            "run": self.name,
            "command": command(self.argv),
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": machine(),
            "load": {"before": self.load_before, "after": load()},
            "figures": dict(figures),
        }
        if baseline is not None:
            line["baseline"] = dict(baseline)
        text = json.dumps(line, sort_keys=False, allow_nan=False)
        if not quiet:
            print(text, flush=True)
        if os.environ.get("CROUPIER_BENCH_NO_RECORD") != "1":
            folder = RESULTS if results is None else results
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / f"{self.bench}.jsonl").open("a", encoding="utf-8") as f:
                f.write(text + "\n")
        return line


def command(argv: list[str]) -> str:
    """The command line as a reader would type it again from the repository's root."""
    if not argv:
        return ""
    script = argv[0]
    with contextlib.suppress(ValueError):  # a script outside the repository: as typed
        script = str(Path(script).resolve().relative_to(Path(__file__).resolve().parent.parent))
    return shlex.join(["python", script, *argv[1:]])


def record(
    bench: str,
    figures: Mapping[str, Any],
    baseline: Mapping[str, Any] | None = None,
    name: str = "",
) -> dict[str, Any]:
    """One record for a run whose start load was not noted (prefer :class:`Run`)."""
    return Run(bench, name).done(figures, baseline)


def read(bench: str, results: Path | None = None) -> list[dict[str, Any]]:
    """Every recorded run of ``bench``, oldest first."""
    path = (RESULTS if results is None else results) / f"{bench}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
