"""``croupier serve`` runs every live table: one background thread ticks each table's
:class:`~ledger.tables.runner.TableRunner` on the system clock, finds tables created
while it runs, logs (and survives) a failing tick, and stops cleanly before the store
closes. On a store with no table yet (SQLite or PostgreSQL), the first start creates one
Infinite Blackjack table, :data:`DEFAULT_TABLE` in EUR with the default configuration,
so the README's main job serves a playable table.

Several processes may run the runners of one table (PostgreSQL): the runner's fence makes
each action happen once (:mod:`ledger.tables.runner`). So that each action is also
*computed* once, the thread ticks while its process holds the runners' lease
(:mod:`ledger.runner_lease`), and otherwise stands by, ticking every
:data:`STANDBY_SECONDS` in case the holder is alive but stuck. ``croupier serve --cells`` runs one
:class:`TableRunners` per cell, each on its own cell's store (:mod:`cells.router`); the
default table is created in the cell its id is placed in.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

from ledger import contracts
from ledger.casino import Casino
from ledger.runner_lease import Lease, lease_for
from ledger.tables.aggregates import Table
from ledger.tables.commands import CreateTable
from ledger.tables.runner import TableRunner

log = logging.getLogger("croupier.tables")

DEFAULT_TABLE = "ibj-1"
DEFAULT_CURRENCY = "EUR"
DEFAULT_TABLE_REQUEST = "croupier-serve/default-table/ibj-1"
INTERVAL_SECONDS = 0.1
"""How often every table is looked at: a window closes at most this late (plus its
``grace_ms``)."""
STANDBY_SECONDS = 2.0
"""How often a process without the runners' lease ticks anyway (a stuck holder's tables
still move, a tick every this many seconds; the fence keeps it correct)."""
DISCOVER_EVERY = 10
"""Ticks between two looks for tables created meanwhile (about a second)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def ensure_default_table(app: Casino) -> str | None:
    """Create the default table when the store has no table yet (SQLite or PostgreSQL:
    its request id makes the creation happen once, also when several workers start at
    once); returns its id if it was created (or had been, by this same request)."""
    page = app.recorder.select_notifications(start=1, limit=1, topics=[contracts.TABLE_OPENED])
    if page:
        return None
    app.command(DEFAULT_TABLE_REQUEST, CreateTable(DEFAULT_TABLE, DEFAULT_CURRENCY, {}))
    return DEFAULT_TABLE


class TableRunners:
    """The runners of every table of one application, ticked from one thread."""

    def __init__(
        self,
        app: Casino,
        clock: Callable[[], datetime] = utc_now,
        interval: float = INTERVAL_SECONDS,
        discover_every: int = DISCOVER_EVERY,
        lease: Lease | None = None,
        standby_seconds: float | None = STANDBY_SECONDS,
        upkeep: Lease | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        read_ahead: bool = False,
    ) -> None:
        self.app = app
        self.read_ahead = read_ahead
        """Each runner reads its settlement batches' seats and sessions ahead (a tables
        process's: ``TableRunner.read_ahead``)."""
        self.lease = lease if lease is not None else lease_for(app.recorder)
        """Whether the background thread ticks every interval (:meth:`turn`)."""
        self.standby_seconds = standby_seconds
        """Without the lease, a tick this often; None: never (a front's, which only
        shares its intake's holds: ``CROUPIER_ROLE=front``)."""
        self.upkeep = upkeep if upkeep is not None else self.lease
        """The upkeep's lease (:func:`ledger.runner_lease.leases_for`): the runners' own in
        the role ``all``; else kept (taken, checked) by this thread too, every tick."""
        self.monotonic = monotonic
        self._standby_due = 0.0
        self.discover_every = discover_every
        self.clock = clock
        self.interval = interval
        self.runners: dict[str, TableRunner] = {}
        self.failures = 0
        self._seen = 0  # the last notification id looked at for new tables
        self._ticks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_error: dict[str, str] = {}

    def discover(self) -> None:
        """Add a runner for every table created since the last look (reading only the
        notifications written since then: the newest id is read first, and ids are in
        commit order)."""
        top = int(self.app.recorder.max_notification_id() or 0)
        while self._seen < top:
            page = self.app.recorder.select_notifications(
                start=self._seen + 1, limit=500, topics=[contracts.TABLE_OPENED]
            )
            for note in page:
                table = self.app.find(Table, UUID(str(note.originator_id)))
                if table is not None and table.table not in self.runners:
                    self.runners[table.table] = TableRunner(
                        self.app, table.table, self.clock, read_ahead=self.read_ahead
                    )
            if len(page) < 500:
                self._seen = top
                return
            self._seen = page[-1].id

    def tick(self) -> int:
        """One look at every table: the actions taken. A table whose tick fails is logged
        (once per distinct error) and tried again on the next tick."""
        self._ticks += 1
        if (self._ticks - 1) % self.discover_every == 0 or not self.runners:
            self.discover()
        done = 0
        for name, runner in self.runners.items():
            try:
                done += len(runner.tick(self.clock()))
            except Exception as e:  # a failing table must not stop the others
                self.failures += 1
                text = f"{type(e).__name__}: {e}"
                if self._last_error.get(name) != text:
                    log.exception("table %s: the runner's tick failed", name)
                    self._last_error[name] = text
            else:
                self._last_error.pop(name, None)
        return done

    def start(self, name: str = "croupier-tables") -> None:
        """Tick in a background thread (``name``: one per cell in ``serve --cells``)."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def turn(self) -> bool:
        """Whether the background thread ticks now: always while this process holds the
        lease; without it, once every ``standby_seconds`` (never if None)."""
        try:
            if self.lease.held():
                return True
        except Exception as e:  # the store is down: the standby's pace, and tell once
            text = f"{type(e).__name__}: {e}"
            if self._last_error.get("lease") != text:
                log.warning("table runners: the lease cannot be taken: %s", text)
                self._last_error["lease"] = text
        if self.standby_seconds is None:
            return False
        now = self.monotonic()
        if now < self._standby_due:
            return False
        self._standby_due = now + self.standby_seconds
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.share_holds()
            if self.upkeep is not self.lease:
                self.keep_upkeep()
            if not self.turn():
                continue
            try:
                self.tick()
            except Exception as e:  # discovery itself failed (the store): log, keep going
                self.failures += 1
                # once per distinct error: a store that is down (a cell's, in serve --cells)
                # fails every tick until it is back
                text = f"{type(e).__name__}: {e}"
                if self._last_error.get("") != text:
                    log.exception("table runners: looking for tables failed")
                    self._last_error[""] = text
            else:
                self._last_error.pop("", None)

    def share_holds(self) -> None:
        """Tell the other workers which of this process's table commands still wait
        (:mod:`ledger.tables.holds`; PostgreSQL only), every interval whether or not this
        process runs the tables."""
        holds = getattr(self.app, "table_holds", None)
        if holds is None:
            return
        self._told("holds", "sharing the intake's holds failed", holds.sync)

    def keep_upkeep(self) -> None:
        """Take the upkeep's lease if free, or check it is still held (no I/O between its
        tries and checks); a store that is down is told once."""
        self._told("upkeep", "the upkeep's lease cannot be taken", self.upkeep.held)

    def _told(self, key: str, what: str, call: Callable[[], object]) -> None:
        """``call``, its failure logged once per distinct error (never the tables'
        thread's end: tried again next tick)."""
        try:
            call()
        except Exception as e:
            text = f"{type(e).__name__}: {e}"
            if self._last_error.get(key) != text:
                log.warning("table runners: %s: %s", what, text)
                self._last_error[key] = text
        else:
            self._last_error.pop(key, None)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current tick (its commands complete) and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.lease.release()
        if self.upkeep is not self.lease:
            self.upkeep.release()
