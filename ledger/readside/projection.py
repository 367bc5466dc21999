"""A projection of the signed log into a view, kept with tracking; and its check.

:class:`Projector` says what a projection folds (its tables, the events it wants, how one
event changes the rows); :class:`Projection` runs it against one application's log:

- :meth:`Projection.step` reads the next events after the view's position (verifying
  each one it opens, as every read of the application does), folds them and writes the
  changed rows with the new position in one transaction (:mod:`ledger.readside.view`);
- :meth:`Projection.catch_up` steps until the view reflects a given position (the log's
  head by default): any process may call it; the tracking row decides who applies what;
- :meth:`Projection.rebuild` empties the view and folds the whole log again (on a running
  server: readers catch up, writers never wait on it for more than a batch);
- :meth:`Projection.check` folds the whole log in memory up to the view's position and
  reports every row that differs from the view's.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ledger.readside.view import Key, Memory, Moved, Row, Rows, Table, View

if TYPE_CHECKING:
    from ledger.ports import LogApp

BATCH = 500
"""Events read per step (and at most applied per transaction)."""
CACHE_ROWS = 20_000
"""Rows a projection keeps between batches (a few MiB): the players, sessions and rounds
being played now; the view holds the rest."""


class Store:
    """What a fold reads and writes: :class:`~ledger.readside.view.Rows` or
    :class:`~ledger.readside.view.Memory`."""

    def get(self, table: Table, key: Key) -> Row | None: ...  # pragma: no cover

    def put(self, table: Table, row: Row) -> None: ...  # pragma: no cover

    def insert(self, table: Table, row: Row) -> None: ...  # pragma: no cover


class Projector(ABC):
    """What one projection folds."""

    name: str
    tables: tuple[Table, ...]
    topics: tuple[str, ...] = ()
    """When set, only events of these topics are read from the log."""

    def wants(self, topic: str, state: bytes) -> bool:
        """Whether a stored event may change the view (asked before it is opened: an
        event passed over is neither verified nor decoded)."""
        return True

    def takes(self, topic: str, doc: Mapping[str, Any]) -> bool:
        """Whether an event (its topic and the names of its payload's fields) may change
        the view: what :meth:`wants` asks of the stored bytes, asked of the payload (or of
        the domain event's attributes, before its payload is built). Never narrower than
        :meth:`apply`: an event it passes over changes nothing."""
        return True

    def takes_topic(self, topic: str) -> bool | None:
        """What :meth:`takes` answers for every event of ``topic`` (True: each is taken,
        False: none is), or None when it depends on the event's fields. Asked once per
        topic per batch: the fold asks :meth:`takes` only of the events it must."""
        return None

    @abstractmethod
    def apply(self, rows: Any, event: Event) -> None:
        """Fold one event into ``rows``."""

    def needs(self, rows: Any, event: Event) -> Iterable[tuple[Table, Key]]:
        """The rows :meth:`apply` will read for ``event``, as far as the event and the
        rows held now (``rows.peek``) tell: read beforehand, a batch's rows at once
        (:func:`prefetch`). A hint only: a row not named here is read when asked for."""
        return ()


@dataclass(frozen=True)
class Difference:
    """One row where the view and the log disagree."""

    projection: str
    table: str
    key: list[Any]
    view: dict[str, Any] | None
    """The view's row (None: missing from the view)."""
    log: dict[str, Any] | None
    """What the log implies (None: the view holds a row the log does not)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Checked:
    projection: str
    position: int
    rows: int
    differences: list[Difference]

    def to_dict(self) -> dict[str, Any]:
        return {
            "projection": self.projection,
            "position": self.position,
            "rows": self.rows,
            "differences": [d.to_dict() for d in self.differences],
        }


class Event(NamedTuple):
    """One event as every projector reads it: its log position (notification id), its
    aggregate (the originator id as text), its topic and its payload (the JSON object the
    log holds, decoded: :func:`ledger.readside.records.payload` builds the same object
    from the domain event a writer holds, without encoding or decoding it)."""

    seq: int
    originator_id: str
    topic: str
    doc: Mapping[str, Any]


def fold(pairs: Sequence[tuple[Projector, Any]], events: Iterable[Event]) -> None:
    """Fold ``events`` into every (projector, rows) of ``pairs`` in one pass: each event
    is read once and handed to each projector that takes it, in log order."""
    plans: dict[str, list[tuple[Projector, Any, bool]]] = {}
    for event in events:
        topic = event.topic
        plan = plans.get(topic)
        if plan is None:  # who takes this topic: always (no question asked), never, or ask
            verdicts = [(p, rows, p.takes_topic(topic)) for p, rows in pairs]
            plan = plans[topic] = [(p, r, v is None) for p, r, v in verdicts if v is not False]
        for projector, rows, ask in plan:
            if not ask or projector.takes(topic, event.doc):
                projector.apply(rows, event)


def prefetch(pairs: Sequence[tuple[Projector, Any]], events: Sequence[Event]) -> None:
    """Each view's rows the fold of ``events`` will read, read beforehand in one
    statement per table (:meth:`ledger.readside.view.Rows.prefetch`), not one per row
    (rows held in memory, :class:`~ledger.readside.view.Memory`, need none)."""
    for projector, rows in pairs:
        fetch = getattr(rows, "prefetch", None)
        if fetch is not None:
            fetch(projector, events)


class Source:
    """The log as the projections read it. The last batch read and the events opened from
    it are kept: projections at the same position read and open (verify, decode) each
    event once between them."""

    def __init__(self, app: LogApp) -> None:
        self.app = app
        self.lock = threading.Lock()
        self._key: tuple[int, int] | None = None
        self._batch: tuple[int, Sequence[Any]] = (0, ())
        self._docs: dict[int, dict[str, Any] | None] = {}

    def read(self, after: int, head: int, topics: Sequence[str]) -> tuple[int, Sequence[Any]]:
        """The notifications after ``after`` (at most :data:`BATCH`, none after ``head``;
        only ``topics`` if given) and the position reading them reaches."""
        with self.lock:
            if not topics and self._key == (after, head):
                return self._batch
        notes = self.app.recorder.select_notifications(
            start=after + 1, limit=BATCH, stop=head, topics=topics, inclusive_of_start=True
        )
        batch = (notes[-1].id if len(notes) == BATCH else head, notes)
        if not topics:
            with self.lock:
                self._key, self._batch, self._docs = (after, head), batch, {}
        return batch

    def open(self, note: Any) -> dict[str, Any] | None:
        """The event's payload, its signature and chain verified (None if not an object)."""
        with self.lock:
            if note.id in self._docs:
                return self._docs[note.id]
        _plain, env, _hash = self.app.mapper.open(note)  # type: ignore[attr-defined]
        try:
            doc = json.loads(env.payload)
        except ValueError:
            doc = None
        found = doc if isinstance(doc, dict) else None
        with self.lock:
            if self._key is not None and self._batch[1] and note.id <= self._batch[0]:
                self._docs[note.id] = found
        return found


class Projection:
    """One projector kept up to date from one application's log."""

    def __init__(
        self,
        app: LogApp,
        projector: Projector,
        cache_rows: int = CACHE_ROWS,
        source: Source | None = None,
    ) -> None:
        self.app = app
        self.projector = projector
        self.source = source or Source(app)
        datastore = getattr(app, "factory").datastore  # noqa: B009  # Application's factory
        events_table = getattr(app.recorder, "events_table_name", "stored_events")
        self.view = View(datastore, events_table, projector.name, projector.tables)
        self.rows = Rows(self.view, cache_rows)
        self.lock = threading.Lock()  # one batch at a time in this process
        self.applied = 0  # events folded by this process (the benchmarks read it)

    @property
    def name(self) -> str:
        return self.projector.name

    def position(self) -> int:
        return self.view.position()

    def head(self) -> int:
        return int(self.app.recorder.max_notification_id() or 0)

    def state(self) -> tuple[int, int]:
        """The log's head and the view's position, in one query."""
        return self.view.head_and_position()

    # -- keeping up ----------------------------------------------------------------------

    def _read(self, after: int, head: int) -> tuple[int, list[Event]]:
        """The events after ``after`` (at most :data:`BATCH`, none after ``head``) that
        the projector wants, opened; and the position reading them reaches."""
        end, notes = self.source.read(after, head, self.projector.topics)
        return end, self.wanted(notes)

    def wanted(
        self, notes: Sequence[Any], opened: Callable[[Any], dict[str, Any] | None] | None = None
    ) -> list[Event]:
        """The notifications the projector wants, opened (by ``opened``: the source's
        :meth:`Source.open` by default, which verifies)."""
        return opened_events([self.projector], notes, opened or self.source.open)

    def step(self, head: int | None = None) -> int:
        """Apply the next batch; the view's position after it."""
        with self.lock:
            return self._step(head)

    def _step(self, head: int | None) -> int:
        start = self.view.position()
        head = self.head() if head is None else head
        if start >= head:
            return start
        end, events = self._read(start, head)
        try:
            with self.view.transaction() as c:
                if self.view.lock(c) != start:
                    raise Moved
                self.rows.begin(c, start)
                prefetch([(self.projector, self.rows)], events)
                fold([(self.projector, self.rows)], events)
                self.rows.flush()
                self.view.track(c, end)
        except Moved:
            # Another process moved the view (or a rebuild reset it) since it was read:
            # nothing of this batch was written; the next step starts from the view.
            self.rows.abandon()
            return self.view.position()
        except BaseException:
            self.rows.abandon()
            raise
        self.rows.committed(end)
        self.applied += len(events)
        return end

    def catch_up(self, until: int | None = None) -> int:
        """Step until the view reflects ``until`` (the log's head now by default); the
        position reached (at least ``until``, unless the log is not there yet)."""
        head = self.head()
        target = head if until is None else min(until, head)
        position = self.view.position()
        while position < target:
            position = self.step(head)
        return position

    # -- trust ---------------------------------------------------------------------------

    def rebuild(self) -> int:
        """Empty the view and fold the log again up to its head; the position reached."""
        with self.lock:
            with self.view.transaction() as c:
                self.view.lock(c)
                self.view.reset(c)
            self.rows.abandon()
        return self.catch_up()

    def fold(self, until: int) -> Memory:
        """The view as the log up to ``until`` implies it, folded in memory."""
        memory = Memory()
        after = 0
        while after < until:
            after, events = self._read(after, until)
            fold([(self.projector, memory)], events)
        return memory

    def check(self) -> Checked:
        """Every row of the view compared with what the signed log implies at the view's
        position (read in one snapshot of the view)."""
        with self.view.snapshot() as c:
            position = self.view.position(c)
            held = {t.name: self.view.select(c, t) for t in self.view.tables}
        expected = self.fold(position)
        differences: list[Difference] = []
        count = 0
        for table in self.view.tables:
            implied = expected.tables.get(table.name, {})
            rows = {table.key_of(r): r for r in held[table.name]}
            count += len(rows)
            for key in sorted(set(rows) | set(implied), key=_order):
                have, want = rows.get(key), implied.get(key)
                if have != want:
                    differences.append(Difference(self.name, table.name, list(key), have, want))
        return Checked(self.name, position, count, differences)


def _order(key: Key) -> tuple[str, ...]:
    return tuple(str(k) for k in key)


def step_together(views: Sequence[Projection], start: int, head: int) -> int:
    """One batch for every view at position ``start``, in one transaction: the log read
    and opened once, every view's rows and tracking record committed together (one
    commit where each view alone would take one each). The position after it."""
    locks = [p.lock for p in views]
    for lock in locks:
        lock.acquire()
    try:
        end, notes = views[0].source.read(start, head, ())
        events = opened_events([p.projector for p in views], notes, views[0].source.open)
        try:
            with views[0].view.transaction() as c:
                for p in views:
                    if p.view.lock(c) != start:
                        raise Moved
                for p in views:
                    p.rows.begin(c, start)
                prefetch([(p.projector, p.rows) for p in views], events)
                fold([(p.projector, p.rows) for p in views], events)
                for p in views:
                    p.rows.flush()
                    p.view.track(c, end)
        except BaseException as e:
            for p in views:
                p.rows.abandon()
            if isinstance(e, Moved):
                return start  # another process moved a view: each steps from its own
            raise
        for p in views:
            p.rows.committed(end)
            p.applied += len(events)
        return end
    finally:
        for lock in reversed(locks):
            lock.release()


def opened_events(
    projectors: Sequence[Projector],
    notes: Sequence[Any],
    opened: Callable[[Any], dict[str, Any] | None],
) -> list[Event]:
    """The notifications any of ``projectors`` wants (asked of the stored bytes, before
    opening), opened by ``opened`` (verified, decoded) once for all of them."""
    wanted = []
    for note in notes:
        topic = note.topic
        for projector in projectors:
            if (not projector.topics or topic in projector.topics) and projector.wants(
                topic, note.state
            ):
                break
        else:
            continue
        doc = opened(note)
        if doc is not None:
            wanted.append(Event(note.id, str(note.originator_id), topic, doc))
    return wanted
