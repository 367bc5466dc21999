"""The views folded at commit: each insert of events also folds them into the views, in
the same transaction, from the events the writer holds in memory.

The store's recorder calls :class:`CommitFold` inside every transaction that inserts
events (:class:`ledger.store.InsertObserver`); for each view it can take at once, it:

1. reads the view's tracking row and the log's head before this insert (PostgreSQL: the
   tracking rows ``FOR UPDATE SKIP LOCKED``, pipelined after the insert lock and before
   the insert, so it costs no round trip; SQLite: after the insert, under the write lock);
2. if the view is at that head, folds the inserted events (their payloads as sealed a
   moment ago: nothing to verify or read back); if it is a few events behind
   (:data:`GAP`: another writer's events, a step of the runner not taken), reads and
   verifies those first; further behind, leaves it to the runner;
3. writes the rows and the new position in the events' transaction (in a savepoint: a
   view that fails to fold is left behind, the command is not refused for it).

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eventsourcing.persistence import Notification, StoredEvent

from ledger import envelope
from ledger.readside.projection import Event, Projection

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
    found: Any = None  # the cursor holding the tracking rows (PostgreSQL, pipelined)
    folded: list[tuple[Projection, int, int]] = field(default_factory=list)


class CommitFold:
    """The store's insert observer that keeps the views with the log."""

    def __init__(self, readside: ReadSide) -> None:
        self.readside = readside
        self.enabled = True
        self.failures = 0
        self.folded = 0  # transactions whose events were folded here (the benchmarks)
        self._local = threading.local()
        views = list(readside.projections.values())
        self._names = {p.view.tracking_name: p for p in views}
        first = views[0].view
        self._postgres = first.postgres
        self._events, self._tracking = first.events_table, first.tracking_table

    def _state(self) -> _Commit | None:
        state: _Commit | None = getattr(self._local, "commit", None)
        return state

    def before_insert(self, c: Any) -> None:
        self.ended(False)  # a previous attempt of this thread that did not end
        if not self.enabled:
            return
        state = _Commit()
        self._local.commit = state
        for p in self.readside.projections.values():
            if p.lock.acquire(blocking=False):
                state.locked.append(p)
        if state.locked and self._postgres:
            names = [p.view.tracking_name for p in state.locked]
            c.execute(
                state.locked[0].view.sql(
                    "SELECT application_name AS name, notification_id AS position, "
                    f"(SELECT MAX(notification_id) FROM {self._events}) AS head "
                    f"FROM {self._tracking} WHERE application_name = ANY(?) "
                    "FOR UPDATE SKIP LOCKED"
                ),
                (names,),
                prepare=True,
            )
            state.found = c

    def inserted(self, c: Any, stored: Sequence[StoredEvent], ids: Sequence[int]) -> None:
        state = self._state()
        if state is None or not state.locked:
            return
        view = state.locked[0].view
        if state.found is not None:
            rows = state.found.fetchall()
        else:  # SQLite: under the write lock since the insert
            names = [p.view.tracking_name for p in state.locked]
            marks = ", ".join("?" for _ in names)
            view.execute(
                c,
                "SELECT application_name AS name, notification_id AS position, "
                f"(SELECT MAX(rowid) FROM {self._events} WHERE rowid < ?) AS head "
                f"FROM {self._tracking} WHERE application_name IN ({marks})",
                (min(ids), *names),
            )
            rows = c.fetchall()
        if not rows:
            return
        head = int(rows[0]["head"] or 0)
        at = {self._names[r["name"]]: int(r["position"] or 0) for r in rows}
        end = max(ids)
        own = [
            Notification(s.originator_id, s.originator_version, s.topic, s.state, n)
            for s, n in zip(stored, ids, strict=True)
        ]
        gaps: dict[int, list[Notification] | None] = {}
        docs: dict[int, dict[str, Any] | None] = {}
        plan: list[tuple[Projection, int, list[Event]]] = []
        for p, position in at.items():
            try:
                if position not in gaps:
                    gaps[position] = self._gap(c, view, position, head)
                gap = gaps[position]
                if gap is None:
                    continue  # too far behind (or ahead: a view reset under it): the runner's
                events = p.wanted(gap) + p.wanted(own, opened=lambda n: _payload(n, docs))
            except Exception as e:
                # A row before this commit the read side cannot read (a tampered row the
                # sealer is refusing, say) must not refuse the command: the runner, which
                # reports it, takes the views from here.
                gaps[position] = None
                self.failures += 1
                log.warning("read side: events before a commit not read: %r", e)
                continue
            plan.append((p, position, events))
        if not plan:
            return
        view.execute(c, "SAVEPOINT readside_commit")
        try:
            for p, position, events in plan:
                p.rows.begin(c, position)
                for seq, oid, topic, doc in events:
                    p.projector.apply(p.rows, seq, oid, topic, doc)
                p.rows.flush()
            view.track_all(c, [p.view.tracking_name for p, _, _ in plan], end)
            view.execute(c, "RELEASE SAVEPOINT readside_commit")
        except Exception as e:
            # The events are written whatever the views do: the views stay where they
            # were and the runner (which logs what fails there) takes them from there.
            if self._postgres:
                # A refused statement stops the pipeline until its next sync; the
                # transaction is then open again to the rollback to the savepoint.
                with contextlib.suppress(Exception), c.connection.pipeline() as pipeline:
                    pipeline.sync()
            view.execute(c, "ROLLBACK TO SAVEPOINT readside_commit")
            for p, _, _ in plan:
                p.rows.discard()
            self.failures += 1
            log.warning("read side: a commit's events not folded: %r", e)
            return
        state.folded = [(p, end, len(events)) for p, _, events in plan]

    def _gap(self, c: Any, view: Any, position: int, head: int) -> list[Notification] | None:
        """The events after ``position`` up to ``head`` (the log before this insert), or
        None if there are more than :data:`GAP` of them."""
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
        return [
            Notification(
                convert(r["originator_id"]),
                r["originator_version"],
                r["topic"],
                bytes(r["state"]),
                r["id"],
            )
            for r in found
        ]

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


def _payload(note: Any, docs: dict[int, dict[str, Any] | None]) -> dict[str, Any] | None:
    """A payload this process has just sealed (so it is not verified again), decoded once
    for every view."""
    if note.id not in docs:
        try:
            doc = json.loads(envelope.decode(note.state).payload)
        except ValueError:
            doc = None
        docs[note.id] = doc if isinstance(doc, dict) else None
    return docs[note.id]


def follow_commits(readside: ReadSide) -> CommitFold | None:
    """Observe the application's inserts, if its recorder takes an observer."""
    recorder = readside.app.recorder
    if not hasattr(recorder, "observer"):
        return None
    fold = CommitFold(readside)
    recorder.observer = fold
    return fold
