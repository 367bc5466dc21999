"""The players' table commands, gathered per table and applied in bulk (issue 28).

A command from the table's WebSocket (:mod:`api.table_socket`) or its REST routes
(:mod:`api.tables`) is queued on its table's intake and awaited in the event loop: no
worker thread waits for it. One drain per table, in a thread of its own while commands
wait, takes whatever is queued (what arrived while the previous batch was written: no
timer, so a lone command waits for nothing; at most :data:`MAX_BATCH`) and applies it
as one batch (:func:`ledger.tables.intake.apply`: one unit of work, one transaction);
each caller then gets its own result or typed error. The next batch forms while one is
written, so under load the batches grow by themselves and the cost of a transaction, a
thread hand-off and a wake-up is shared by every command in them.

Where seamless wallets are configured, a command that may stake goes to
:meth:`Casino.command` as before (a seamless session's wallet debit comes first, outside
any batch; the gate decides in a worker thread, never in the loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from anyio import to_thread
from starlette.datastructures import State

from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables import intake
from ledger.unit_of_work import UnitOfWork

MAX_BATCH = 256
"""Commands in one batch at most: a batch's callers are all answered when it commits, so
under a flood the answers come out every few hundred commands, not after thousands (and
a batch that must be run again command by command, after a collision, stays small)."""


class TableQueue:
    """One table's commands waiting for their batch, and whether its drain is running."""

    def __init__(self, app: Casino) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.waiting: list[tuple[intake.Item, asyncio.Future[tc.SeatChanged]]] = []
        self.draining = False
        self.batches = 0
        self.commands = 0

    async def submit(self, item: intake.Item) -> tc.SeatChanged:
        """``item``'s answer, once its batch has committed. Stamped with its arrival here
        (:mod:`ledger.tables.arrivals`): its window is judged at that time, and the
        table's runner holds the window open until it is answered."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tc.SeatChanged] = loop.create_future()
        arrivals = self.app.table_arrivals
        if arrivals is not None:
            item = replace(item, arrived=arrivals.enter(item.cmd.table))
        with self.lock:
            self.waiting.append((item, fut))
            start, self.draining = not self.draining, True
        if start:
            # Its own thread, not the loop's shared pool (anyio's 40 workers, where the
            # batches would queue behind the sockets' and streams' thread work); it ends
            # once nothing waits.
            threading.Thread(
                target=self._drain, args=(loop,), name="croupier-intake", daemon=True
            ).start()
        return await fut

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            with self.lock:
                batch = self.waiting[:MAX_BATCH]
                del self.waiting[:MAX_BATCH]
                if not batch:
                    self.draining = False
                    return
            try:
                outcomes = intake.apply(self.app, [item for item, _ in batch])
            except Exception as e:  # every caller gets an answer; the next batch runs
                outcomes = [intake.Outcome(error=e)] * len(batch)
            finally:
                self._answered([item for item, _ in batch])
            self.batches += 1
            self.commands += len(batch)
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_answer, batch, outcomes)

    def _answered(self, items: list[intake.Item]) -> None:
        """The runner no longer holds a window for these (committed or refused)."""
        arrivals = self.app.table_arrivals
        if arrivals is None:
            return
        for item in items:
            if item.arrived is not None:
                arrivals.leave(item.cmd.table, item.arrived)


def _answer(
    batch: list[tuple[intake.Item, asyncio.Future[tc.SeatChanged]]],
    outcomes: list[intake.Outcome],
) -> None:
    for (_, fut), outcome in zip(batch, outcomes, strict=True):
        if fut.done():  # its caller went (a closed socket)
            continue
        if outcome.error is not None:
            fut.set_exception(outcome.error)
        else:
            assert outcome.result is not None
            fut.set_result(outcome.result)


def queue_of(state: State, app: Casino, table: str) -> TableQueue:
    """The table's intake in this process (one per table and application)."""
    queues: dict[str, TableQueue] | None = getattr(state, "table_intake", None)
    if queues is None:
        queues = state.table_intake = {}
    found = queues.get(table)
    if found is None or found.app is not app:
        found = queues[table] = TableQueue(app)
    return found


async def run(
    state: State,
    app: Casino,
    request_id: str,
    cmd: tc.TableCommand[Any],
    check: Callable[[UnitOfWork], None] | None = None,
) -> tc.SeatChanged:
    """``cmd``'s answer (or its typed error raised), through its table's intake."""
    if intake.gated(app, cmd):  # the seamless gate reads the session: not in the loop
        gated: tc.SeatChanged = await to_thread.run_sync(app.command, request_id, cmd, check)
        return gated
    return await queue_of(state, app, cmd.table).submit(intake.Item(request_id, cmd, check))
