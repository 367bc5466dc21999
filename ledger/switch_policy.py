"""How often the interpreter makes a thread that holds the GIL hand it to one waiting
(``CROUPIER_SWITCH_INTERVAL_MS``; unset or ``0``: the interpreter's 5 ms).

A server process runs a thread that computes most of the time (the event loop, reading
thousands of sockets and writing their frames) beside threads that mostly wait for the
store (the group-commit writer, a table's runner, the table feed). Each time a waiting
thread's call returns (a PostgreSQL round trip, a SQLite commit, a hand-off between
threads) it needs the GIL back, and CPython hands it over only once the holder has run
for the switch interval. A batch that makes hundreds of such returns then waits for time
that is not its own work (the convoy effect). ``bench/bench_table_settle.py --busy``
shows it: the settlement of 10,000 seats beside a thread of pure Python takes 4.5 times
as long as alone with the 5 ms interval, twice as long with 0.5 ms.

In ``croupier serve`` at 10,000 WebSocket players the trade is not one-sided, so serve
keeps the interpreter's interval: 0.5 ms made the players' decisions answer three to
five times slower (the event loop, which reads them and writes the answers, is
interrupted ten times as often) and did not move the fan-out or the settlement beyond
the runs' spread, and Red Dog over HTTP costs 7 to 8 % more CPU a round with it
(docs/performance/table-command-budget.md, "The interpreter's switch interval").
"""

from __future__ import annotations

import sys


def tune(interval_ms: float) -> None:
    """Set the interpreter's switch interval to ``interval_ms`` (``0``: leave it)."""
    if interval_ms < 0:
        raise ValueError(f"a switch interval is positive, not {interval_ms} ms")
    if interval_ms:
        sys.setswitchinterval(interval_ms / 1e3)
