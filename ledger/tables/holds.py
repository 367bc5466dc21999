"""The runner holds a window for commands waiting in *other* workers' intakes too.

With ``croupier serve --workers N`` on PostgreSQL any worker takes any player's command,
and the table's runner runs in one of them (:mod:`ledger.runner_lease`): it sees its own
process's waiting commands (:class:`ledger.tables.arrivals.Arrivals`) but not another
worker's. So every worker tells the others, through PostgreSQL session advisory locks
(nothing is written): for each (table, second) in which commands that still wait in its
intake arrived, it holds a *shared* lock named after them (:meth:`SharedHolds.sync`,
called by the tables' thread every tick, 0.1 s; no query while nothing changes). Before it
closes a window, the runner tries to take *exclusively*, in one statement and for that
statement's transaction only, the locks of the table's seconds from
:data:`LOOKBACK_SECONDS` before the deadline up to the deadline's own second
(:meth:`SharedHolds.elsewhere_before`): one it cannot take is held by a worker with a
command that arrived in time, and the close waits (at most
:data:`~ledger.tables.arrivals.MAX_HOLD`, as for its own).

What it does not promise: a worker's locks follow its intake a tick late (0.1 s, within
the runner's grace of 0.5 s on a machine that keeps up); a whole second is locked, so a
command that arrived in the deadline's second but after the deadline holds the close until
it is answered (refused) too; a worker that dies releases its locks with its connection.
On SQLite the server is one process and there is nothing to share (:func:`holds_for`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from ledger.tables.arrivals import Arrivals, second_of

log = logging.getLogger("croupier.tables")

LOOKBACK_SECONDS = 120
"""How far before a deadline the runner looks for another worker's waiting commands (a
command that has waited longer than this is past any hold)."""


class SharedHolds:
    """This process's shared locks for its intake's waiting commands, and the runner's
    look at everyone's (one PostgreSQL log)."""

    def __init__(self, recorder: Any, arrivals: Arrivals) -> None:
        self.datastore = recorder.datastore
        self.prefix = (
            f"croupier-table-hold:{recorder.datastore.schema}.{recorder.events_table_name}"
        )
        self.arrivals = arrivals
        self.held: set[tuple[str, int]] = set()
        self._kept: tuple[Any, Any] | None = None
        """(the pool's context manager, its connection) while a lock is held."""

    def name(self, table: str, second: int) -> str:
        return f"{self.prefix}:{table}:{second}"

    def sync(self) -> None:
        """Hold a shared lock for each (table, second) with a waiting command in this
        process, and no other."""
        want = self.arrivals.seconds()
        take, drop = want - self.held, self.held - want
        if not take and not drop:
            return
        try:
            conn = self._connection()
            if drop:
                names = [self.name(t, s) for t, s in drop]
                conn.execute(
                    "SELECT pg_advisory_unlock_shared(hashtextextended(n, 0))"
                    " FROM unnest(%s::text[]) AS n",
                    (names,),
                )
                self.held -= drop
            if take:
                keys = sorted(take)
                rows = conn.execute(
                    "SELECT pg_try_advisory_lock_shared(hashtextextended(n, 0)) AS got"
                    " FROM unnest(%s::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i",
                    ([self.name(t, s) for t, s in keys],),
                ).fetchall()
                # one not taken (the runner is looking this instant) is tried next tick
                self.held |= {k for k, row in zip(keys, rows, strict=True) if row["got"]}
        except Exception as e:  # the store: the locks went with the connection; next tick
            log.warning("table holds: %r", e)
            self._drop()
        if not self.held:
            self._drop()

    def elsewhere_before(self, table: str, deadline: datetime) -> bool:
        """Whether a worker (this one included) holds a command for ``table`` that arrived
        in the :data:`LOOKBACK_SECONDS` before ``deadline``'s second, or in it."""
        last = second_of(deadline)
        names = [self.name(table, s) for s in range(last - LOOKBACK_SECONDS, last + 1)]
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                "SELECT bool_and(pg_try_advisory_xact_lock(hashtextextended(n, 0))) AS free"
                " FROM unnest(%s::text[]) AS n",
                (names,),
            ).fetchone()
        return not (row and row["free"])

    def close(self) -> None:
        """Let every lock go (the connection goes back to the pool)."""
        self._drop()

    def _connection(self) -> Any:
        if self._kept is None:
            manager = self.datastore.get_connection()
            self._kept = (manager, manager.__enter__())
        return self._kept[1]

    def _drop(self) -> None:
        """Every lock let go, and the connection back to the pool: never a connection
        that may still hold one (the pool would lend it on, locks and all)."""
        self.held = set()
        if self._kept is None:
            return
        manager, conn = self._kept
        self._kept = None
        try:
            conn.execute("SELECT pg_advisory_unlock_all()")
        except Exception as e:  # broken: closed, so whatever it held goes with it
            log.warning("table holds: releasing: %r", e)
            conn.close()
        try:
            manager.__exit__(None, None, None)
        except Exception as e:  # the pool discards a broken connection
            log.warning("table holds: returning the connection: %r", e)


def holds_for(recorder: object, arrivals: Arrivals) -> SharedHolds | None:
    """The shared holds on PostgreSQL; None on SQLite (one process)."""
    from eventsourcing.postgres import PostgresApplicationRecorder

    if isinstance(recorder, PostgresApplicationRecorder):
        return SharedHolds(recorder, arrivals)
    return None
