"""Group commit: the commands waiting in this process share one transaction.

One writer per process (whichever caller finds no batch running becomes it) takes up to
``Settings.group_commit_max`` waiting commands, runs their handlers one after another on
one shared view of the aggregates (so two commands on one session in one batch behave
exactly as if run serially) and saves every event and request record in one ``save``:
one table lock, one COMMIT. Commands arriving while a batch commits wait for the next,
so batches form without any timer; a lone command is a batch of one.

Fewer round trips: the batch never SELECTs an idempotency record (a retry of a request
already recorded collides on the record's version 1 at insert), and takes aggregates from
the process's cache without the fast-forward SELECT. A stale cached aggregate that the
batch changed collides at insert too; one it only read is checked with one SELECT before
the batch saves. Any collision, or a handler that raised after changing an aggregate,
runs the whole batch once more, as one batch, on state read from the store; a second
collision sends it down the careful path (:meth:`Casino.run_carefully`): command by
command from reloaded state, exactly the single-command behaviour. Nothing is answered
before its batch has committed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from copy import deepcopy
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.application import Repository
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import AggregateRecorder as Recorder
from eventsourcing.persistence import IntegrityError, PersistenceError

from ledger import commands as c
from ledger import metrics
from ledger.checkpoints import Sealer
from ledger.errors import StorageUnavailable
from ledger.handlers import AnyHandler
from ledger.requests import Request
from ledger.results import wire_of
from ledger.unit_of_work import UnitOfWork

log = logging.getLogger("croupier")
R = TypeVar("R")
Check = Callable[[UnitOfWork], None]
"""An admission check of the caller (the API's closed-session check): read-only, run on
the command's own unit of work before anything else, the idempotency look-up included,
so it reads the aggregates the command is about to load and costs no read of its own;
what it raises is the command's answer (nothing runs, nothing is recorded)."""


class Casino(Protocol):
    """What a batch needs of the application (:class:`ledger.casino.Casino`)."""

    fallbacks: int

    @property
    def repository(self) -> Repository[UUID]: ...
    @property
    def recorder(self) -> Recorder: ...
    @property
    def sealer(self) -> Sealer: ...

    def find(self, cls: type[Any], aggregate_id: UUID) -> Any: ...
    def cached(self, aggregate_id: UUID) -> Aggregate | None: ...
    def refresh(self, ids: Iterable[UUID]) -> None: ...
    def save(self, *objs: Any, **kwargs: Any) -> Any: ...
    def handle(
        self, handler: AnyHandler, uow: UnitOfWork, cmd: c.Command[Any], rid: UUID, digest: str
    ) -> Any: ...
    def run_carefully(self, p: Pending) -> None: ...
    def refuse(self, p: Pending, error: BaseException) -> None: ...
    def answer(self, prior: Request, request_id: str, cmd: c.Command[R], digest: str) -> R: ...


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass(eq=False)
class Pending:
    """One command waiting for its batch; ``done`` once its outcome is durable."""

    handler: AnyHandler
    cmd: c.Command[Any]
    request_id: str
    rid: UUID
    digest: str
    memo: dict[str, Any] = field(default_factory=dict)
    check: Check | None = None
    done: bool = False
    result: Any = None
    """The handler's result (a :class:`ledger.results.Result`), once answered."""
    error: BaseException | None = None
    wake: threading.Lock = field(default_factory=_held_lock)
    """Released once by the writer: the command is answered, or its caller writes next."""
    notify: Callable[[Pending], None] | None = None
    """Instead of ``wake``: the caller does not wait in a thread (``Casino.command_soon``);
    called once, on the writer's thread, when the command is answered."""

    def wake_up(self) -> None:
        """The writer is done with this command (answered, or its caller writes next)."""
        notify = self.notify
        if notify is not None:
            # Called once, then dropped: the caller's callback holds the future that will
            # hold this command, a cycle only the garbage collector would free (every
            # command's future, closures and result: the collector's pauses of a server).
            self.notify = None
            notify(self)
        else:
            self.wake.release()

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.done = result, error, True

    def outcome(self) -> Any:
        """The command's result, or its error raised. The error is let go as it is
        raised (asked once): its traceback keeps the frames it passes through, and they
        keep this record, a cycle for the garbage collector with every refusal."""
        error = self.error
        if error is not None:
            self.error = None
            try:
                raise error
            finally:
                del error, self
        assert self.result is not None
        return self.result


class BatchView:
    """The aggregates as one batch sees them, loaded once and shared by its commands."""

    def __init__(self, app: Casino, fresh: bool = False) -> None:
        self.app = app
        self.fresh = fresh
        """Every aggregate read from the store (fast-forwarded), none from the cache."""
        self.held: dict[UUID, Aggregate] = {}
        self.lent: dict[UUID, Aggregate] = {}
        """Read only (:meth:`read`): the cache's own objects, not copied."""
        self.cached_at: dict[UUID, int] = {}  # taken from the cache: its version then
        self.seen: dict[UUID, int] = {}  # versions as the current command found them

    def begin(self) -> None:
        self.seen = {}

    def find(self, cls: type[Any], aggregate_id: UUID) -> Any:
        agg = self.held.get(aggregate_id)
        if agg is None:
            lent = self.lent.pop(aggregate_id, None)
            # a copy of what an earlier read of this batch saw (its version is the one
            # the staleness check holds), or the aggregate loaded now
            agg = fresh_copy(lent) if lent is not None else self._load(cls, aggregate_id)
            if agg is None:
                return None
            self.held[aggregate_id] = agg
        self.seen.setdefault(aggregate_id, agg.version)
        return agg if isinstance(agg, cls) else None

    def read(self, cls: type[Any], aggregate_id: UUID) -> Any:
        """As :meth:`find`, for a handler that only reads (never changes what it gets):
        the batch's own copy if a command of the batch holds one, else the cache's object
        itself, not copied. A runner's deal or window close reads every seat of a round
        and changes none: copying 10,000 seats was half of either. An aggregate read so
        is checked for newer events in the store like any other taken from the cache
        (:meth:`stale`); a command that then changes it gets its own copy (:meth:`find`)."""
        agg = self.held.get(aggregate_id)
        if agg is None:
            agg = self.lent.get(aggregate_id)
        if agg is None:
            cached = None if self.fresh else self.app.cached(aggregate_id)
            if cached is None:
                return self.find(cls, aggregate_id)  # read from the store: the batch's own
            agg = self.lent[aggregate_id] = cached
            self.cached_at[aggregate_id] = cached.version
        self.seen.setdefault(aggregate_id, agg.version)
        return agg if isinstance(agg, cls) else None

    def _load(self, cls: type[Any], aggregate_id: UUID) -> Aggregate | None:
        cached = None if self.fresh else self.app.cached(aggregate_id)
        if cached is not None:
            # A copy: the cache must not see changes of a batch that may not commit.
            agg: Aggregate = fresh_copy(cached)
            self.cached_at[aggregate_id] = agg.version
            return agg
        found: Aggregate | None = self.app.find(cls, aggregate_id)  # from the store
        return found

    def changed_by(self, uow: UnitOfWork) -> bool:
        """Whether the current command changed an aggregate the batch already held."""
        return any(
            agg.id in self.seen and agg.version != self.seen[agg.id] for agg in uow.touched()
        )

    def keep(self, uow: UnitOfWork) -> bool:
        """Hold what the command touched; False if it created an aggregate whose id the
        batch already holds (two rounds drew the same game code): alone, that collides
        at insert and is retried; in a batch the second would silently replace the first."""
        touched = uow.touched()
        if any(self.held.get(agg.id, agg) is not agg for agg in touched):
            return False
        for agg in touched:
            self.held[agg.id] = agg
        return True

    def stale(self) -> bool:
        """Whether an aggregate read from the cache, and left unchanged, has newer events in
        the store (another process wrote it): then what the batch decided is not valid."""
        recorder = self.app.recorder
        unchanged = [
            (a, v)
            for a, v in self.cached_at.items()
            if a not in self.held or self.held[a].version == v  # only read, or left unchanged
        ]
        if not unchanged:
            return False
        any_newer = getattr(recorder, "any_newer", None)  # ledger.store: a few queries
        if any_newer is not None:
            return bool(any_newer(unchanged))
        return any(recorder.select_events(a, gt=v, limit=1) for a, v in unchanged)


_SHARED = frozenset({str, int, float, bool, type(None), bytes, UUID, datetime, date})
"""Immutable types a copy shares instead of rebuilding (``deepcopy`` rebuilds every UUID
and datetime through ``__reduce_ex__``: most of the cost of copying an aggregate)."""


AggregateT = TypeVar("AggregateT", bound=Aggregate)


def fresh_copy(agg: AggregateT) -> AggregateT:
    """A deep copy of ``agg``: every list, dict and set is new (aliases kept, as
    ``deepcopy`` keeps them), immutable values are shared, anything else is deep-copied."""
    memo: dict[int, Any] = {}
    copied: AggregateT = object.__new__(type(agg))
    memo[id(agg)] = copied
    copied.__dict__.update({k: _fresh(v, memo) for k, v in vars(agg).items()})
    return copied


def _fresh(value: Any, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if kind in _SHARED:
        return value
    done = memo.get(id(value))
    if done is not None:
        return done
    out: Any
    if kind is list:
        if _SHARED.issuperset(map(type, value)):  # a C loop: a 10,000-seat round's ids
            out = list(value)
        else:
            out = memo[id(value)] = []
            out.extend(v if type(v) in _SHARED else _fresh(v, memo) for v in value)
    elif kind is dict:
        if _SHARED.issuperset(map(type, value.values())):
            out = dict(value)
        else:
            out = memo[id(value)] = {}
            for k, v in value.items():
                out[k] = v if type(v) in _SHARED else _fresh(v, memo)
    elif (kind is tuple or kind is frozenset) and _SHARED.issuperset(map(type, value)):
        out = value
    else:
        out = deepcopy(value, memo)
    memo[id(value)] = out
    return out


class _Fallback(Exception):
    """The batch cannot commit as one: run it again from the store, or carefully."""


def run_batch(app: Casino, batch: list[Pending]) -> None:
    """Run, save and answer every command of ``batch`` (see module docstring).

    A batch that collides (a stale cached aggregate, a version conflict at insert) runs
    once more as one batch on state brought up to the store's: the cached copies of
    every aggregate the first try used refreshed in a few queries (``Casino.refresh``),
    the others read from the store; only if that collides too do its commands take the
    careful path one by one. A collision is usually another writer of this process (the
    table runner closing a step while a table's decisions are written), or of another
    (a tables process settling seats a front wrote to): command by command, or an
    aggregate at a time, each would read every aggregate again, a 10,000-seat round
    included, for thousands of commands."""
    used: set[UUID] = set()
    for fresh in (False, True):
        try:
            _run(app, batch, fresh, used)
            return
        except _Fallback:
            app.fallbacks += 1
            metrics.BATCH_COLLISIONS.labels("store" if fresh else "cache").inc()
    for p in batch:
        if not p.done:
            app.run_carefully(p)


def _run(
    app: Casino, batch: list[Pending], fresh: bool = False, used: set[UUID] | None = None
) -> None:
    """One try at the batch (``fresh``: the cached aggregates of ``used``, those of the
    try before, refreshed first, any other read from the store; every aggregate read
    from the store if that refresh fails); nothing is answered or kept if it raises
    :class:`_Fallback`, and ``used`` then holds what this try used."""
    refreshed = False
    if fresh and used:
        try:
            app.refresh(used)
            refreshed = True
        except Exception as e:  # the store, or a row it refuses: each read tells its own
            log.warning("a batch's aggregates not refreshed, read one by one: %r", e)
    view = BatchView(app, fresh=fresh and not refreshed)
    try:
        _try(app, batch, view)
    except _Fallback:
        if used is not None:
            used.update(view.held, view.lent, view.cached_at)
        raise


def _try(app: Casino, batch: list[Pending], view: BatchView) -> None:
    records: dict[UUID, Request] = {}
    accepted: list[Pending] = []
    refused: list[tuple[Pending, BaseException]] = []
    twins: list[tuple[Pending, Request]] = []
    denied: list[tuple[Pending, BaseException]] = []
    for p in batch:
        view.begin()
        uow = UnitOfWork(view.find, p.memo, read=view.read)
        if p.check is not None:
            # On the batch's view: what it read from the cache is checked against the
            # store before anything is answered (``stale``), like what the handlers read.
            try:
                p.check(uow)
            except PersistenceError as e:
                refused.append((p, e))  # answered as the store's failure, as alone
                continue
            except Exception as e:
                denied.append((p, e))
                continue
        twin = records.get(p.rid)
        if twin is not None:  # the same request id twice in one batch
            twins.append((p, twin))
            continue
        try:
            result = app.handle(p.handler, uow, p.cmd, p.rid, p.digest)
        except IntegrityError:
            raise _Fallback() from None
        except Exception as e:
            if view.changed_by(uow):
                raise _Fallback() from None  # the shared view is no longer serial
            refused.append((p, e))
            continue
        if not view.keep(uow):
            raise _Fallback()
        cmd = p.cmd
        records[p.rid] = Request(
            scope=cmd.scope,
            request_id=p.request_id,
            command=cmd.name,
            digest=p.digest,
            result=wire_of(result),
        )
        p.result = result
        accepted.append(p)
    try:
        if view.stale():
            raise _Fallback()
        if records:
            saved = [agg for agg in view.held.values() if _has_pending(agg)]
            app.save(*saved, *records.values())
            cache = app.repository.cache
            if cache is not None:
                # What was just committed is the newest state: the next batch starts here
                # (a stale entry would only collide at insert and take the careful path).
                for agg in saved:
                    cache.put(agg.id, agg)
            for _ in accepted:
                app.sealer.maybe_seal()
    except IntegrityError:
        raise _Fallback() from None
    except PersistenceError as e:
        log.error("a batch of %d commands: the store failed: %r", len(batch), e, exc_info=e)
        for p in batch:
            p.finish(error=_unavailable(p, e))
        return
    try:
        _answer(app, accepted, twins, refused, denied)
    finally:
        # Each refusal's traceback keeps this frame, whose lists kept the refusal: a cycle
        # per refused command for the garbage collector, its batch and frames with it.
        refused.clear()
        denied.clear()


def _answer(
    app: Casino,
    accepted: list[Pending],
    twins: list[tuple[Pending, Request]],
    refused: list[tuple[Pending, BaseException]],
    denied: list[tuple[Pending, BaseException]],
) -> None:
    """Answer a written batch's commands: the accepted, the twins of one request id
    (each as its first), the refused (recorded as refused) and the denied."""
    for p in accepted:
        p.finish(result=p.result)
    for p, twin in twins:
        try:
            p.finish(result=app.answer(twin, p.request_id, p.cmd, p.digest))
        except Exception as e:
            p.finish(error=e)
    for p, error in refused:
        app.refuse(p, error)
    for p, error in denied:
        p.finish(error=error)


def _has_pending(agg: Aggregate) -> bool:
    return bool(getattr(agg, "_pending_events", None))


def _unavailable(p: Pending, e: BaseException) -> StorageUnavailable:
    err = StorageUnavailable(
        f"the store failed during {p.cmd.name}; nothing was written, retry later",
        request_id=p.request_id,
    )
    err.__cause__ = e
    return err
