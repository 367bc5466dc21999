"""Signed checkpoints: RFC 9162 Merkle tree heads over every event in notification order.

When the sealer runs: after every ``checkpoint_every`` commands of this process (in the
timer's thread while it runs, else in the thread that counted), on a timer
(``checkpoint_interval_seconds``) while ``croupier serve`` runs, on ``Casino.close()``, and
on demand (``Casino.seal()``). A checkpoint is itself an event (one small aggregate per
checkpoint, id derived from its sequence number, so two sealers can never both write
number N). What it protects: once a checkpoint covers an event, deleting that event, any
older event, a whole aggregate, or the log's tail up to that size changes the tree and is
reported by ``audit-cli verify``; events written after the newest checkpoint are protected
by their signatures and hash chains only until the next checkpoint.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import IntegrityError, Notification, PersistenceError

from ledger import contracts, envelope, merkle, metrics, significant
from ledger.accounts import NAMESPACE
from ledger.contracts import SignificantKind
from ledger.sealer_fence import fence_for
from ledger.written import Row, Written

if TYPE_CHECKING:
    from ledger.ports import LogApp

PAGE = 2000
log = logging.getLogger("croupier.sealer")


def _always() -> bool:
    return True


def checkpoint_id(seq: int) -> UUID:
    return uuid5(NAMESPACE, f"checkpoint:{seq}")


class Checkpoint(Aggregate):
    TOPIC = "croupier/checkpoint@1"

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = "croupier/checkpoint/created@1"

    @staticmethod
    def create_id(seq: int) -> UUID:
        return checkpoint_id(seq)

    @event("Sealed", topic="croupier/checkpoint/sealed@1")
    def __init__(
        self,
        seq: int,
        tree_size: int,
        root_hash: str,
        timestamp_ms: int,
        kid: str,
        signature: str,
        last_notification_id: int,
        subtree_roots: list[str],
    ) -> None:
        self.seq = seq
        self.tree_size = tree_size
        self.root_hash = root_hash
        self.timestamp_ms = timestamp_ms
        self.kid = kid
        self.signature = signature
        self.last_notification_id = last_notification_id
        self.subtree_roots = list(subtree_roots)

    def view(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "tree_size": self.tree_size,
            "root_hash": self.root_hash,
            "timestamp_ms": self.timestamp_ms,
            "kid": self.kid,
            "signature": self.signature,
            "last_notification_id": self.last_notification_id,
        }


@dataclass(frozen=True)
class _SealerState:
    seq: int
    tree: merkle.IncrementalTree
    last_notification_id: int


class Sealer:
    def __init__(self, app: LogApp) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._state: _SealerState | None = None
        self._commands = 0
        self._stop = threading.Event()
        self._due = threading.Event()  # checkpoint_every commands counted: seal now
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.cell = ""  # the cell this log is (ledger.metrics labels), "" when not in cells
        self.newest: dict[str, Any] | None = None
        """The newest checkpoint this process knows (wrote, or read from the store), kept
        in memory: ``/health`` and the metrics never wait on the store for it."""
        events = getattr(app, "events", None)
        self.written: Written | None = None
        """The rows this process wrote since its last checkpoint (:mod:`ledger.written`),
        noted by its event store for this sealer, which then need not read them."""
        if events is not None and hasattr(events, "written"):
            if events.written is None:
                events.written = Written()
            self.written = events.written
        self.last_ok: float | None = None
        """Wall time of the last tick that reached the store (sealed, or found nothing new)."""
        self.on_sealed: list[Callable[[dict[str, Any]], None]] = []
        """Called (in the sealing thread) with each checkpoint this process writes."""
        # One sealer at a time per log across processes (ledger.sealer_fence).
        self.fence = fence_for(app.recorder)
        self.skipped = 0  # seals left to another process that held the fence
        self.on_duty: Callable[[], bool] = _always
        """Whether this process seals on its timer (:mod:`ledger.runner_lease`: with
        several workers, the holder of the runners' lease); off duty, a tick only follows
        the checkpoints another process writes. An explicit :meth:`seal` always seals."""

    def latest(self) -> Checkpoint | None:
        seq = self._latest_seq()
        return self.app.find(Checkpoint, checkpoint_id(seq)) if seq else None

    def get(self, seq: int) -> Checkpoint | None:
        return self.app.find(Checkpoint, checkpoint_id(seq))

    def _exists(self, seq: int) -> bool:
        return bool(list(self.app.recorder.select_events(checkpoint_id(seq), limit=1)))

    def _latest_seq(self, known: int = 0) -> int:
        """The newest checkpoint's number, searched from ``known`` (a number that exists,
        0: from the start) by doubling steps, then halving."""
        if not self._exists(known + 1):
            return known
        lo, step = known + 1, 1
        while self._exists(lo + step):
            lo, step = lo + step, step * 2
        hi = lo + step  # lo exists, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._exists(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def refresh(self) -> dict[str, Any] | None:
        """Read the newest stored checkpoint into :attr:`newest` (another process may
        have written it); the view, or None if the log has none."""
        cp = self.latest()
        self.newest = None if cp is None else cp.view()
        return self.newest

    def follow(self) -> dict[str, Any] | None:
        """:meth:`refresh` from the newest checkpoint known (a few lookups a tick, where
        a search from the first costs two per doubling of the chain)."""
        known = 0 if self.newest is None else int(self.newest["seq"])
        seq = self._latest_seq(known)
        if seq != known:
            cp = self.get(seq)
            self.newest = None if cp is None else cp.view()
            if cp is not None and self.written is not None:
                self.written.forget_through(cp.last_notification_id)  # sealed elsewhere
        return self.newest

    def _load(self) -> _SealerState:
        cp = self.latest()
        if cp is None:
            return _SealerState(0, merkle.IncrementalTree(), 0)
        self.newest = cp.view()
        tree = merkle.IncrementalTree.from_hex(cp.tree_size, cp.subtree_roots)
        return _SealerState(cp.seq, tree, cp.last_notification_id)

    def maybe_seal(self) -> None:
        """Count a command; every ``checkpoint_every`` commands, seal. While the timer's
        thread runs (``croupier serve``) it is woken to seal: the writer that counted
        answers its batch at once, instead of first hashing every row since the last
        checkpoint while the batch and every command queued behind it wait (the bench
        did not show that wait in the CPU or the tail: docs/performance/request-path.md)."""
        self._commands += 1
        if self._commands >= self.app.settings.checkpoint_every:
            self._commands = 0
            if self._thread is not None and self._thread.is_alive():
                self._due.set()
            else:
                self.seal(wait=False)

    def seal(self, wait: bool = True) -> dict[str, Any] | None:
        """Write a checkpoint over every event stored so far (None if none is new). With
        ``wait`` False (the timer, every N commands), a seal another process is running
        now is left to it: nothing is written here and None is returned."""
        with self._lock, self.fence.hold(wait=wait) as held:
            if not held:
                self.skipped += 1
                return None
            return self._seal_fenced()

    def _seal_fenced(self) -> dict[str, Any] | None:
        for _ in range(10):
            state = self._state
            if state is not None and self._exists(state.seq + 1):
                # Another process sealed since this one last did (the workers of one
                # server take turns at the fence): start from its checkpoint, not from
                # this process's last one, or every row it covered is read, verified
                # and hashed here again, only for the save to collide on its number.
                state = None
            state = state or self._load()
            tree, last_id = state.tree, state.last_notification_id
            history = self.app.key_history
            news = 0  # rows other than checkpoints
            opener = self.app.mapper.open  # type: ignore[attr-defined]
            written = self.written
            if written is not None:
                written.forget_through(last_id)  # another process's checkpoint covers them
            for ids in iter_id_pages(self.app, last_id):
                handed = written.take(ids) if written is not None else [None] * len(ids)
                read = self._unwritten(ids, handed)
                leaves = []
                for n, row in zip(ids, handed, strict=True):
                    if row is not None:  # written here: the hash it was sealed under
                        history.check_signer(n, row.kid, f"row {n}")
                        h, topic = row.event_hash, row.topic
                    elif (note := read.get(n)) is not None:
                        _, env, h = opener(note)
                        # Never checkpoint a row whose key was not valid at its position.
                        history.check_row(n, env, f"row {n}")
                        topic = note.topic
                    else:
                        continue  # gone since its id was read: as if never listed
                    leaves.append(merkle.leaf_hash(h))
                    news += topic != contracts.CHECKPOINT_SEALED
                    last_id = n
                tree = tree.extend(leaves)  # a page at once: one new tree, not one a row
            if not news:
                # Nothing but the last checkpoint's own row is new: an idle log gets no
                # more checkpoints (each would cover the one before, one a second forever).
                # The next seal covers these rows with the events that follow them.
                self._state = state
                return None
            ring = self.app.keyring
            ts = int(time.time() * 1000)
            root = tree.root()
            sig = ring.signing_key.sign(
                envelope.tree_head_message(tree.size, root, ts, ring.signing_kid, history.log_id)
            )
            cp = Checkpoint(
                seq=state.seq + 1,
                tree_size=tree.size,
                root_hash=root.hex(),
                timestamp_ms=ts,
                kid=ring.signing_kid,
                signature=sig.hex(),
                last_notification_id=last_id,
                subtree_roots=tree.to_hex(),
            )
            try:
                self.app.save(cp)
            except IntegrityError:
                self._state = None  # another sealer wrote this number: catch up
                continue
            self._state = _SealerState(cp.seq, tree, last_id)
            view = cp.view()
            self.newest = view
            metrics.CHECKPOINTS.labels(self.cell).inc()
            for observer in list(self.on_sealed):
                observer(view)
            return view
        return None

    def _unwritten(
        self, ids: Sequence[int], handed: Sequence[Row | None]
    ) -> dict[int, Notification]:
        """The rows of ``ids`` this process did not write (or no longer holds), read
        from the store in one range, by id."""
        missing = [n for n, row in zip(ids, handed, strict=True) if row is None]
        if not missing:
            return {}
        want = set(missing)
        rows = self.app.recorder.select_notifications(
            start=missing[0], limit=len(ids), stop=missing[-1], inclusive_of_start=True
        )
        return {note.id: note for note in rows if note.id in want}

    # -- the timer used by `croupier serve` -------------------------------------------

    def checkpoint_age(self) -> float | None:
        """Seconds since the newest checkpoint known to this process (None before the
        first): from memory, so it answers at once even while the store does not."""
        if self.newest is None:
            return None
        return max(0.0, time.time() - int(self.newest["timestamp_ms"]) / 1000)

    def tick(self) -> None:
        """One tick of the timer: seal what is new (unless another process is sealing
        now: then read the checkpoint it wrote); a failure is logged once and kept in
        :attr:`last_error` (``/health``) until a tick succeeds."""
        try:
            if not self.on_duty():  # another process seals: know what it wrote
                self.follow()
            else:
                skipped = self.skipped
                self.seal(wait=False)
                if self.skipped != skipped or self.newest is None:
                    self.refresh()
        except Exception as e:  # retried at the next tick; logged and in /health
            metrics.SEALER_ERRORS.labels(self.cell).inc()
            message = f"{type(e).__name__}: {e}".replace("\n", " ")
            if message != self.last_error:
                log.error("sealer: checkpoint failed: %s", message)
                if not isinstance(e, PersistenceError):  # a row refused, not a store down
                    self._record_refusal(message)
            self.last_error = message
        else:
            if self.last_error:
                log.warning("sealer: checkpoints resumed")
            self.last_error = None
            self.last_ok = time.time()

    def _record_refusal(self, message: str) -> None:
        """A refusal is a significant event: in the log (signed), once per distinct error."""
        try:
            significant.record(self.app, SignificantKind.SEALER_REFUSED, error=message)
        except Exception as e:  # the log is what failed; the error is logged and in /health
            log.error("sealer: could not record its refusal: %s", e)

    def start(self, interval: float, name: str = "croupier-sealer") -> None:
        """Tick every ``interval`` seconds in a thread of its own (one per log, so a
        store that does not answer delays no other log's checkpoints)."""

        def run() -> None:
            self.tick()
            while not self._stop.is_set():
                self._due.wait(interval)  # the interval, or the count of commands
                self._due.clear()
                if not self._stop.is_set():
                    self.tick()

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._due.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def iter_notifications(
    app: LogApp, after_id: int = 0, topics: Sequence[str] = ()
) -> Iterator[Notification]:
    """Every stored event after notification ``after_id`` (only ``topics`` if given), in
    notification order, read a page at a time."""
    for page in iter_pages(app, after_id, topics):
        yield from page


def iter_id_pages(app: LogApp, after_id: int = 0) -> Iterator[Sequence[int]]:
    """The notification ids after ``after_id``, a page (at most :data:`PAGE`, never
    empty) at a time."""
    recorder: Any = app.recorder  # the store's recorders (ledger.store) list ids
    while ids := recorder.select_ids(after_id, PAGE):
        yield ids
        after_id = ids[-1]


def iter_pages(
    app: LogApp, after_id: int = 0, topics: Sequence[str] = ()
) -> Iterator[Sequence[Notification]]:
    """:func:`iter_notifications` a page (at most :data:`PAGE` rows, never empty) at a
    time."""
    start = after_id + 1
    while True:
        page: Sequence[Notification] = app.recorder.select_notifications(
            start=start, limit=PAGE, topics=topics, inclusive_of_start=True
        )
        if not page:
            return
        yield page
        start = page[-1].id + 1


def feed_opened(
    app: LogApp,
    after_id: int,
    feed: Callable[[int, str, str, bytes], object],
    topics: Sequence[str] = (),
    wants: Callable[[str, str], bool] | None = None,
) -> int:
    """The catch-up loop of the read models: open (verify signature and chain, as every
    read of the app does) each stored event after ``after_id`` and ``feed(id,
    originator_id, topic, payload)`` it; the last notification id read (``after_id`` if
    none). ``feed`` returning ``True`` stops the read there. ``wants(originator_id,
    topic)`` False: the event is passed over unopened (a read model that follows a few
    aggregates neither verifies nor decodes everyone else's events)."""
    last = after_id
    for note in iter_notifications(app, after_id, topics):
        last = note.id
        if wants is not None and not wants(str(note.originator_id), note.topic):
            continue
        _plain, env, _hash = app.mapper.open(note)  # type: ignore[attr-defined]
        if feed(note.id, str(note.originator_id), note.topic, env.payload) is True:
            break
    return last
