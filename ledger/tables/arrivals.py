"""A player's bet or decision is judged by when it arrived, not by when its batch ran.

Seed 002 refuses the bets placed after the betting time, and a decision counts in the step
it was made in. Under load a command can wait behind others in its table's intake
(:mod:`api.table_intake`) for longer than the runner's grace: judged by the clock when its
batch runs, a bet sent in time was refused (``betting-closed``, ``step-closed``) because the
server was busy. So the intake stamps each command when it arrives (:meth:`Arrivals.enter`,
the application's clock, under a lock) and the handlers judge the window against that stamp
(:data:`ARRIVED`, set around the command's handler); and the table's runner does not close
a window while a command that arrived before its deadline is still waiting in this process
(:meth:`Arrivals.waiting_before`), for at most :data:`MAX_HOLD` past the deadline and the
grace, so a stuck intake cannot stop the table.

Nothing else changes: a command still acts only on the window that is open when it runs (a
window the runner closed refuses it, as before), and the runner's close still reads every
seat after every held command has committed. A command is stamped when it reaches the
intake, after its socket message or HTTP request has been read and authorised; the time
it spent before that (the kernel's buffers, the event loop) is not seen. The hold is this
process's; on PostgreSQL the other workers' are seen through advisory locks
(:mod:`ledger.tables.holds`).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, TypeVar

R = TypeVar("R")

ARRIVED: ContextVar[datetime | None] = ContextVar("table_command_arrived", default=None)
"""While a handler runs a command from the intake: when that command arrived."""

MAX_HOLD = timedelta(seconds=10)
"""The longest the runner holds a window past its deadline and grace for commands that
arrived before the deadline and still wait (then it closes the window: they are refused)."""


class Arrivals:
    """The commands of each table that have arrived at this process's intake and are not
    answered yet, by arrival time (thread-safe: stamped in the event loop, answered in the
    intake's thread, read by the runner's)."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[str, Counter[datetime]] = {}
        self._seconds: Counter[tuple[str, int]] = Counter()
        """Waiting commands per (table, whole second of their arrival since the epoch):
        what the other workers are told (:mod:`ledger.tables.holds`)."""

    def enter(self, table: str) -> datetime:
        """Stamp a command for ``table`` now and count it as waiting; its stamp."""
        with self._lock:
            at = self.clock()
            self._waiting.setdefault(table, Counter())[at] += 1
            self._seconds[table, second_of(at)] += 1
            return at

    def leave(self, table: str, at: datetime) -> None:
        """The command stamped ``at`` is answered (committed or refused)."""
        with self._lock:
            waiting = self._waiting.get(table)
            if waiting is None or waiting[at] <= 0:
                return
            waiting[at] -= 1
            if waiting[at] == 0:
                del waiting[at]
            if not waiting:
                del self._waiting[table]
            key = (table, second_of(at))
            self._seconds[key] -= 1
            if self._seconds[key] <= 0:
                del self._seconds[key]

    def waiting_before(self, table: str, deadline: datetime) -> bool:
        """Whether a command for ``table`` that arrived before ``deadline`` still waits."""
        with self._lock:
            waiting = self._waiting.get(table)
            return waiting is not None and min(waiting) < deadline

    def seconds(self) -> set[tuple[str, int]]:
        """The (table, second of arrival) of every waiting command."""
        with self._lock:
            return set(self._seconds)

    def waiting(self, table: str) -> int:
        """How many commands for ``table`` wait."""
        with self._lock:
            return sum(self._waiting.get(table, Counter()).values())


def second_of(at: datetime) -> int:
    """The whole second since the epoch ``at`` falls in."""
    return math.floor(at.timestamp())


def judged_at(handler: Callable[..., R], at: datetime) -> Callable[..., R]:
    """``handler`` run with :data:`ARRIVED` set to ``at``."""

    def judged(*args: Any, **kwargs: Any) -> R:
        token = ARRIVED.set(at)
        try:
            return handler(*args, **kwargs)
        finally:
            ARRIVED.reset(token)

    return judged
