"""The views folded at commit: each insert of events also folds them into the views, in
the same transaction, from the events the writer holds in memory.

The store's recorder calls :class:`CommitFold` inside every transaction that inserts
events (:class:`ledger.store.InsertObserver`); for each view it can take at once, it:

1. reads the view's tracking row and the log's head before this insert, after the insert
   under its lock (PostgreSQL: the tracking rows ``FOR UPDATE SKIP LOCKED``, already in
   the savepoint of step 3: pipelined before the insert, as it was, a refused read aborted
   the insert with it);
2. if the view is at that head, folds the inserted events in one pass for every view:
   each event is read once, from its domain event (:mod:`ledger.readside.records`: the
   payload the log holds, built field by field as the projectors read it, with no JSON
   encoded or decoded; rows inserted without their domain events are decoded from their
   sealed payloads); if the view is a few events behind (:data:`GAP`: another writer's
   events, a step of the runner not taken), reads and verifies those first; further
   behind, leaves it to the runner;
3. writes the rows and the new position in the events' transaction, in a savepoint (a
   view that fails to fold is left behind, the command is not refused for it): on
   PostgreSQL one statement for every view's rows and tracking rows
   (:meth:`ledger.readside.view.View.write_together`), then a sync of the pipeline, so
   that a statement the database refuses raises inside the savepoint and not at the
   events' commit; on SQLite one ``executemany`` per table. The savepoint is not
   released: the events' commit ends it with the transaction.

With several workers on one log only one folds at its commits (``on_duty``: the holder
of the runners' lease, :mod:`ledger.runner_lease`); the others' events are folded by its
next commit (within :data:`GAP`) or by its runner. Two folders would each find the views
last written by the other, and drop and re-read their cache of view rows at every commit.

Every writer of the log goes through the recorder (commands in batches, tables, the
seamless outbox, the sealer), so the views move with the log and a read rarely has
anything to catch up. The runner (:mod:`ledger.readside.runner`) remains the catch-up for
whatever this path leaves: a view that was locked or too far behind, a rebuild, writers
that do not fold. Tracking keeps every path exact: a batch is applied only on top of the
position it was computed from, and with its events' commit or not at all.

In process the views are shared with the runner and the readers: a view whose lock is
held (a runner's batch) is skipped at once, never waited for: the command path does not
wait on the read side. The lock taken is held until the events' transaction ends, so the
view's row cache is updated only with what was committed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eventsourcing.persistence import JSONTranscoder, Notification, StoredEvent

from ledger import envelope
from ledger.readside.projection import (
    Event,
    Projection,
    Projector,
    fold,
    opened_events,
    prefetch,
)
from ledger.readside.records import payload_of, records

log = logging.getLogger("croupier.readside")

GAP = 100
"""Events a view may be behind the log and still be folded at a commit (they are read
and verified in the command's transaction; further behind, the runner catches up)."""


class ReadSide(Protocol):
    """What the fold needs of :class:`ledger.readside.ReadSide` (named here, not
    imported: the package imports this module)."""

    app: Any
    projections: dict[str, Projection]


@dataclass
class _Commit:
    """One transaction's state, in the thread that runs it."""

    locked: list[Projection] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # their tracking names
    folded: list[tuple[Projection, int, int]] = field(default_factory=list)


class CommitFold:
    """The store's insert observer that keeps the views with the log."""

    def __init__(self, readside: ReadSide) -> None:
        self.readside = readside
        self.enabled = True
        self.on_duty: Callable[[], bool] = lambda: True
        """Whether this process folds at its commits (:mod:`ledger.runner_lease`: with
        several workers, the holder of the runners' lease folds every worker's events)."""
        self.failures = 0
        self.folded = 0  # transactions whose events were folded here (the benchmarks)
        self._local = threading.local()
        views = list(readside.projections.values())
        self._names = {p.view.tracking_name: p for p in views}
        first = views[0].view
        self._postgres = first.postgres
        self._events, self._tracking = first.events_table, first.tracking_table
        self._source = views[0].source
        transcoder = getattr(readside.app.mapper, "transcoder", None)
        self._asks: dict[tuple[str, ...], dict[str, Any]] = {}
        """Per set of views folded together, per topic: the projectors to ask."""
        self._payload = payload_of(transcoder) if isinstance(transcoder, JSONTranscoder) else None
        """Builds a domain event's payload as the log holds it (None: a transcoder other
        than the library's JSON one; the sealed payloads are decoded instead)."""
        self._pg_positions = first.sql(
            "SELECT application_name AS name, notification_id AS position, "
            f"(SELECT MAX(notification_id) FROM {self._events} WHERE notification_id < ?) "
            f"AS head FROM {self._tracking} WHERE application_name = ANY(?) "
            "FOR UPDATE SKIP LOCKED"
        )
        self._sqlite_positions = {
            n: "SELECT application_name AS name, notification_id AS position, "
            f"(SELECT MAX(rowid) FROM {self._events} WHERE rowid < ?) AS head "
            f"FROM {self._tracking} WHERE application_name IN ({', '.join('?' * n)})"
            for n in range(1, len(views) + 1)
        }

    def _state(self) -> _Commit | None:
        state: _Commit | None = getattr(self._local, "commit", None)
        return state

    def before_insert(self, c: Any) -> None:
        self.ended(False)  # a previous attempt of this thread that did not end
        if not (self.enabled and self.on_duty()):
            return
        state = _Commit()
        self._local.commit = state
        for name, p in self._names.items():
            if p.lock.acquire(blocking=False):
                state.locked.append(p)
                state.names.append(name)

    def inserted(
        self,
        c: Any,
        stored: Sequence[StoredEvent],
        ids: Sequence[int],
        events: Sequence[Any] | None = None,
    ) -> None:
        state = self._state()
        if state is None or not state.locked:
            return
        view = state.locked[0].view
        if self._postgres:
            # Every statement of the fold in the savepoint, the tracking rows' read too:
            # pipelined before the insert, a refused read (a timeout, a table altered)
            # aborted the insert with it. After the insert, under its lock.
            view.execute(c, "SAVEPOINT readside_commit")
            try:
                c.execute(self._pg_positions, (min(ids), state.names), prepare=True)
                rows = c.fetchall()
            except Exception as e:
                self._abandon(c, view, [], e)
                return
        else:  # SQLite: under the write lock since the insert
            view.execute(c, self._sqlite_positions[len(state.locked)], (min(ids), *state.names))
            rows = c.fetchall()
        if not rows:
            return  # PostgreSQL: the savepoint is left to the transaction's end
        head = int(rows[0]["head"] or 0)
        at = {self._names[r["name"]]: int(r["position"] or 0) for r in rows}
        end = max(ids)
        gaps: dict[int, list[Event] | None] = {}
        unread = False
        plan: list[tuple[Projection, list[Event]]] = []
        for p, position in at.items():
            try:
                if position not in gaps:
                    gaps[position] = self._gap(c, view, position, head)
                gap = gaps[position]
                if gap is None:
                    continue  # too far behind (or ahead: a view reset under it): the runner's
            except Exception as e:
                # A row before this commit the read side cannot read (a tampered row the
                # sealer is refusing, say) must not refuse the command: the runner, which
                # reports it, takes the views from here.
                gaps[position] = None
                self.failures += 1
                log.warning("read side: events before a commit not read: %r", e)
                unread = True
                continue
            plan.append((p, gap))
        if not plan:
            if self._postgres and unread:  # the read may have been refused by the database
                self._abandon(c, view, [], None)
            return
        if not self._postgres:
            view.execute(c, "SAVEPOINT readside_commit")
        try:
            projectors = [p.projector for p, _ in plan]
            if events is not None and self._payload is not None:
                asks = self._asks.setdefault(tuple(p.projector.name for p, _ in plan), {})
                own = records(projectors, stored, ids, events, self._payload, asks)
            else:  # events inserted without their domain events: their sealed payloads
                own = _decoded(projectors, stored, ids)
            for p, gap in plan:
                p.rows.begin(c, at[p])
                if gap:
                    fold([(p.projector, p.rows)], gap)
            prefetch([(p.projector, p.rows) for p, _ in plan], own)
            fold([(p.projector, p.rows) for p, _ in plan], own)
            view.write_together(c, [(p.view, p.rows.changes()) for p, _ in plan], end)
            if self._postgres:
                # The savepoint is not released: the events' commit ends it (as on
                # SQLite), and a statement less a commit is a tenth of the fold's CPU
                # here (each pipelined statement is a send of its own).
                # psycopg raises a pipelined statement's error when its result is read:
                # without a sync here, a refused write (or one refused after a while, a
                # lock's timeout) surfaced at the events' commit, outside this try, and
                # refused the command ("pipeline aborted"). One round trip a commit.
                pipeline = getattr(c.connection, "_pipeline", None)
                if pipeline is not None:
                    pipeline.sync()
        except Exception as e:
            self._abandon(c, view, [p for p, _ in plan], e)
            return
        state.folded = [(p, end, len(gap) + len(own)) for p, gap in plan]

    def _abandon(
        self, c: Any, view: Any, plan: Sequence[Projection], error: Exception | None
    ) -> None:
        """The views stay where they were (the savepoint rolled back) and the runner
        (which logs what fails there) takes them from there: the events are written
        whatever the views do."""
        if self._postgres:
            # A refused statement stops the pipeline until its next sync; the
            # transaction is then open again to the rollback to the savepoint.
            with contextlib.suppress(Exception), c.connection.pipeline() as pipeline:
                pipeline.sync()
        view.execute(c, "ROLLBACK TO SAVEPOINT readside_commit")
        for p in plan:
            p.rows.discard()
        if error is not None:
            self.failures += 1
            log.warning("read side: a commit's events not folded: %r", error)

    def _gap(self, c: Any, view: Any, position: int, head: int) -> list[Event] | None:
        """The events after ``position`` up to ``head`` (the log before this insert),
        read and verified, or None if there are more than :data:`GAP` of them."""
        if position == head:
            return []
        # SQLite's rowids count the events; PostgreSQL's ids may skip (a rolled back
        # insert takes its ids from the sequence all the same): read to count them.
        if position > head or head - position > (4 * GAP if self._postgres else GAP):
            return None
        key = "notification_id" if self._postgres else "rowid"
        view.execute(
            c,
            f"SELECT {key} AS id, originator_id, originator_version, topic, state "
            f"FROM {self._events} WHERE {key} > ? AND {key} <= ? ORDER BY {key} LIMIT ?",
            (position, head, GAP + 1),
        )
        found = c.fetchall()
        if len(found) > GAP:
            return None
        # SQLite keeps the id as text, PostgreSQL as a uuid
        convert = getattr(self.readside.app.recorder, "convert_originator_id", lambda i: i)
        notes = [
            Notification(
                convert(r["originator_id"]),
                r["originator_version"],
                r["topic"],
                bytes(r["state"]),
                r["id"],
            )
            for r in found
        ]
        projectors = [p.projector for p in self.readside.projections.values()]
        return opened_events(projectors, notes, self._source.open)

    def ended(self, committed: bool) -> None:
        state = self._state()
        if state is None:
            return
        self._local.commit = None
        for p, end, count in state.folded:
            if committed:
                p.rows.committed(end)
                p.applied += count
            else:
                p.rows.discard()
        if committed and state.folded:
            self.folded += 1
        for p in state.locked:
            p.lock.release()


def _decoded(
    projectors: Sequence[Projector], stored: Sequence[StoredEvent], ids: Sequence[int]
) -> list[Event]:
    """The events of an insert that came without its domain events, from the payloads
    this process has just sealed (so they are not verified again)."""
    notes = [
        Notification(s.originator_id, s.originator_version, s.topic, s.state, n)
        for s, n in zip(stored, ids, strict=True)
    ]
    return opened_events(projectors, notes, _opened)


def _opened(note: Any) -> dict[str, Any] | None:
    try:
        doc = json.loads(envelope.decode(note.state).payload)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def follow_commits(readside: ReadSide) -> CommitFold | None:
    """Observe the application's inserts, if its recorder takes an observer."""
    recorder = readside.app.recorder
    if not hasattr(recorder, "observer"):
        return None
    fold = CommitFold(readside)
    recorder.observer = fold
    return fold
