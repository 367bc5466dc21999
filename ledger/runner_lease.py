"""Which process runs the live tables' runners and the log's upkeep (the views' fold and
the sealer): one at a time per log, on PostgreSQL.

Every runner action is a command with a wire-format request id, so two processes running
the same table's runner never apply an action twice (the fence of
:mod:`ledger.tables.runner`): that is the guarantee, and it does not depend on this
module. What it costs is the work: each action is computed by every process, and all but
one throw it away. Measured with ``croupier serve --workers 2`` at a 10,000-player table
(py-spy on both workers, 2026-12-04): each worker spent a quarter of its samples in the
runner's commands, 16 % in their handlers, where one worker alone spent 12.6 %.

So the runners tick in the process that holds the lease, a PostgreSQL *session*
advisory lock named after the log, taken on a connection the lease keeps: nothing is
written to take it, and a process that dies releases it with its connection, so another
takes it at its next try (every ``retry_seconds``). A process without it stands by and
ticks now and then (``api.table_runners.STANDBY_SECONDS``): if the holder is alive but
its runner stuck, the tables still move, slowly, and the fence keeps that correct.

The same holder does the log's upkeep: it folds the views at each commit
(:mod:`ledger.readside.commits`), runs the read side's runner and seals the checkpoints;
a process without the lease leaves all three to it (each part's ``on_duty`` is the
lease's :meth:`RunnerLease.holds_now`, wired by :mod:`api.app`). Measured with
``croupier serve --workers 2`` (JB 4-line, PostgreSQL, 2026-12-04): when both workers
folded, each found the views last written by the other, so its cache of view rows was
dropped at nearly every commit and read back from the database (``Rows.prefetch``, a
tenth of each worker's samples), and each verified the other's rows for its fold and
its seals. One folder keeps its cache and verifies each foreign row once. A read in a
process off duty still catches the view up itself
(:meth:`ledger.readside.ReadSide.ready`), so reading one's own writes does not depend on
the holder; if the holder dies, the next process to take the lease (within
``RETRY_SECONDS``) takes the upkeep over from the views' tracking rows and the newest
checkpoint.

On SQLite the server is one process: the lease is always held.

**Roles** (``CROUPIER_ROLE``, :func:`leases_for`). By default (``all``) one lease covers
the runners and the upkeep, as above. A deployment may instead split them: *fronts*
(``front``: the players' connections and commands, and the upkeep under a lock of its
own, :func:`upkeep_lock_name`, so one front folds and seals) beside a *tables* process
(``tables``: the runners' lease, never the upkeep). Then a 10,000-seat deal, step close
and settlement run in an interpreter of their own, not beside the event loop that writes
to the players' sockets. A front never ticks a table (not even on standby): if no tables
process runs, the tables wait for one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

log = logging.getLogger("croupier.tables")

RETRY_SECONDS = 1.0
"""How often a process without the lease tries to take it."""
CHECK_SECONDS = 5.0
"""How often the holder checks that its connection (and so the lock) is still there."""


class Lease(Protocol):
    def held(self) -> bool:
        """Whether this process may run the runners now (taking the lease if free)."""

    def holds_now(self) -> bool:
        """Whether this process holds the lease now, as far as it knows: no I/O, no attempt
        to take it (any thread may ask; :meth:`held` is the runners' thread's)."""

    def release(self) -> None: ...


Role = Literal["all", "front", "tables"]
"""What a process does (``CROUPIER_ROLE``; :func:`leases_for`)."""

SPLIT_NEEDS_POSTGRES = (
    "CROUPIER_ROLE={role} needs PostgreSQL (set CROUPIER_DATABASE_URL): on SQLite the"
    " one process runs the tables and the log's upkeep"
)


class AlwaysHeld:
    """One process per store (SQLite): nobody else could run the runners."""

    def held(self) -> bool:
        return True

    def holds_now(self) -> bool:
        return True

    def release(self) -> None:
        return None


class NeverHeld:
    """A lease this process's role never takes (``CROUPIER_ROLE``: a front never runs the
    tables, a tables process never does the upkeep)."""

    def held(self) -> bool:
        return False

    def holds_now(self) -> bool:
        return False

    def release(self) -> None:
        return None


def lock_name(schema: str, table: str) -> str:
    """The advisory lock's name (hashed to its 64-bit key by ``hashtextextended``)."""
    return f"croupier-table-runners:{schema}.{table}"


def upkeep_lock_name(schema: str, table: str) -> str:
    """The upkeep's own lock, taken by front processes (``CROUPIER_ROLE=front``): in the
    role ``all`` the runners' lock covers the upkeep too."""
    return f"croupier-upkeep:{schema}.{table}"


class RunnerLease:
    """A session-level advisory lock on a connection of the store's pool, kept while held."""

    def __init__(
        self,
        recorder: Any,
        retry_seconds: float = RETRY_SECONDS,
        check_seconds: float = CHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        name: Callable[[str, str], str] = lock_name,
        duties: str = "runs the tables, folds the views and seals",
    ) -> None:
        self.datastore = recorder.datastore
        self.name = name(recorder.datastore.schema, recorder.events_table_name)
        self.duties = duties
        """What the holder does, for the log line when it takes the lease."""
        self.retry_seconds = retry_seconds
        self.check_seconds = check_seconds
        self.clock = clock
        self._kept: tuple[Any, Any] | None = None
        """(the pool's context manager, its connection) while the lock is held."""
        self._next_try = 0.0
        self._next_check = 0.0

    def held(self) -> bool:
        now = self.clock()
        if self._kept is not None:
            if now < self._next_check:
                return True
            try:
                self._kept[1].execute("SELECT 1")
            except Exception as e:  # the connection is gone, and the lock with it
                log.warning("table runners: the lease's connection failed: %r", e)
                self._drop()
                return False
            self._next_check = now + self.check_seconds
            return True
        if now < self._next_try:
            return False
        self._next_try = now + self.retry_seconds
        manager = self.datastore.get_connection()
        conn = manager.__enter__()
        try:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0)) AS held", (self.name,)
            ).fetchone()
        except BaseException:
            manager.__exit__(None, None, None)
            raise
        if not (row and row["held"]):
            manager.__exit__(None, None, None)
            return False
        self._kept = (manager, conn)
        self._next_check = now + self.check_seconds
        log.info("table runners: this process %s (%s)", self.duties, self.name)
        return True

    def holds_now(self) -> bool:
        return self._kept is not None

    def release(self) -> None:
        if self._kept is None:
            return
        try:
            self._kept[1].execute("SELECT pg_advisory_unlock_all()")
        except Exception as e:  # a closed connection holds no lock
            log.warning("table runners: releasing the lease: %r", e)
        self._drop()

    def _drop(self) -> None:
        assert self._kept is not None
        manager, _ = self._kept
        self._kept = None
        try:
            manager.__exit__(None, None, None)
        except Exception as e:  # the pool discards a broken connection
            log.warning("table runners: returning the lease's connection: %r", e)


def lease_for(recorder: object) -> Lease:
    from eventsourcing.postgres import PostgresApplicationRecorder

    if isinstance(recorder, PostgresApplicationRecorder):
        return RunnerLease(recorder)
    return AlwaysHeld()


def leases_for(recorder: object, role: Role = "all") -> tuple[Lease, Lease]:
    """A process's two leases on ``recorder``'s log: (the tables' runners', the upkeep's:
    the views' fold at commit, their catch-up and the sealer's timer).

    - ``all``: one lease for both (:func:`lease_for`), as every process had before roles;
    - ``front``: never the runners' (another process runs the tables); the upkeep under
      a lock of its own (:func:`upkeep_lock_name`), so one of several fronts folds;
    - ``tables``: the runners' lease, never the upkeep.

    A deployment runs processes of the role ``all`` only, or fronts beside tables
    processes: an ``all`` process beside a front would fold beside it (correct, as two
    folders are, but each would drop its cache of view rows at every commit). The split
    roles need PostgreSQL (``ValueError``): on SQLite the server is one process."""
    from eventsourcing.postgres import PostgresApplicationRecorder

    if role == "all":
        lease = lease_for(recorder)
        return lease, lease
    if not isinstance(recorder, PostgresApplicationRecorder):
        raise ValueError(SPLIT_NEEDS_POSTGRES.format(role=role))
    if role == "front":
        upkeep = RunnerLease(recorder, name=upkeep_lock_name, duties="folds the views and seals")
        return NeverHeld(), upkeep
    return RunnerLease(recorder, duties="runs the tables"), NeverHeld()
