"""seed 002 "Disconnessione" follows the real connection: a session's streams and sockets of
a table, on every process.

A session's first connection (stream or socket) to a table in this process sends the
ledger's :class:`~ledger.presence.HoldTable` (the seat is connected, and this process
holds it); when its last one here ends, :class:`~ledger.presence.ReleaseTable` is sent
once ``grace`` seconds have passed without a new one (a reconnect within the grace changes
nothing in the log). The release disconnects the seat only if no other process holds it
(:mod:`ledger.presence`): a player with a connection on each of two workers that closes
one stays connected. :class:`Presence` beats for this process and releases the holds of
killed ones. So a player whose
stream is lost before the betting deadline, for longer than the grace, has the bets
refunded; after it, the seat gets the automatic actions (the ledger's handlers apply the
rule; this module only decides when the connection counts as lost).

Commands run at most one at a time per (session, table), always toward the latest wanted
state: in the server queued for the process's writer (``send_soon``: ten thousand players
connecting share its batches, no thread waits for each), else on ``submit`` (inline in
tests).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from ledger import contracts, entropy
from ledger.casino import Casino
from ledger.commands import Command
from ledger.presence import BEAT_SECONDS, ReleaseTable, WorkerBeat, fresh

log = logging.getLogger("croupier.stream")

Key = tuple[str, str]
"""(session id, table)."""
Send = Callable[[str, str, bool], None]
"""Sends Connect (True) or Disconnect (False) for (session, table) to the ledger."""
SendSoon = Callable[[str, str, bool, Callable[[], None]], bool]
"""As :data:`Send`, without waiting: queues the command for the writer's next batch and
calls back (on the writer's thread) once it is durable; False if it could not be queued
(then :data:`Send` is used, in a thread of ``submit``)."""


class Connections:
    def __init__(
        self,
        send: Send,
        grace: float,
        clock: Callable[[], float],
        submit: Callable[[Callable[[], None]], object] | None = None,
        send_soon: SendSoon | None = None,
    ) -> None:
        self.send = send
        self.send_soon = send_soon
        self.grace = grace
        self.clock = clock
        self.submit = submit or (lambda fn: fn())
        self.lock = threading.Lock()
        self.streams: dict[Key, int] = {}
        """Open streams per key."""
        self.pending: dict[Key, float] = {}
        """Keys whose last stream ended: when Disconnect is due."""
        self.connected: set[Key] = set()
        """Keys whose Connect was sent (and no Disconnect since)."""
        self._wanted: dict[Key, bool] = {}
        self._running: set[Key] = set()

    def opened(self, session: str, table: str) -> None:
        key = (session, table)
        with self.lock:
            self.streams[key] = self.streams.get(key, 0) + 1
            self.pending.pop(key, None)
            if key in self.connected:
                return  # a reconnect within the grace: nothing to tell the ledger
            self.connected.add(key)
        self._want(key, True)

    def closed(self, session: str, table: str) -> None:
        key = (session, table)
        with self.lock:
            left = self.streams.get(key, 0) - 1
            if left > 0:
                self.streams[key] = left
                return
            self.streams.pop(key, None)
            self.pending[key] = self.clock() + self.grace

    def due(self, now: float | None = None) -> list[Key]:
        """Send Disconnect for every key whose grace has run out; return them."""
        now = self.clock() if now is None else now
        with self.lock:
            late = [k for k, t in self.pending.items() if t <= now]
            for k in late:
                del self.pending[k]
                self.connected.discard(k)
        for k in late:
            self._want(k, False)
        return late

    def _want(self, key: Key, connected: bool) -> None:
        with self.lock:
            self._wanted[key] = connected
            if key in self._running:
                return
            self._running.add(key)
        if self.send_soon is not None:
            self._deliver_soon(key)
        else:
            self.submit(lambda: self._deliver(key))

    def _next_want(self, key: Key, sent: bool | None) -> bool | None:
        """The state still to send for ``key`` after ``sent``; None when ``sent`` is the
        latest wanted (the key's delivery ends, and is forgotten once nothing holds it)."""
        with self.lock:
            want = self._wanted[key]
            if want is not sent:
                return want
            self._running.discard(key)
            if key not in self.connected and key not in self.pending:
                self._wanted.pop(key, None)
            return None

    def _deliver_soon(self, key: Key, sent: bool | None = None) -> None:
        """:meth:`_deliver` without a waiting thread: queue the wanted state, and look
        again when it is durable (the callback, on the writer's thread)."""
        assert self.send_soon is not None
        want = self._next_want(key, sent)
        if want is None:
            return
        try:
            queued = self.send_soon(key[0], key[1], want, lambda: self._deliver_soon(key, want))
        except Exception as e:  # as _deliver: logged, and the next wanted state goes on
            log.warning("table %s session %s: connected=%s failed: %r", *key[::-1], want, e)
            self._deliver_soon(key, want)
            return
        if not queued:  # the writer would not take it: a thread waits for it instead
            self.submit(lambda: self._deliver(key))

    def _deliver(self, key: Key) -> None:
        sent: bool | None = None
        while (want := self._next_want(key, sent)) is not None:
            try:
                self.send(key[0], key[1], want)
            except Exception as e:  # the stream goes on; the runner's timers still apply
                log.warning("table %s session %s: connected=%s failed: %r", *key[::-1], want, e)
            sent = want


PRESENCE_TOPICS = [
    contracts.TABLE_PRESENCE_OPENED,
    contracts.TABLE_PRESENCE_HELD,
    contracts.TABLE_PRESENCE_RELEASED,
    contracts.PRESENCE_WORKER_STARTED,
    contracts.PRESENCE_WORKER_BEAT,
]


class Presence:
    """This process's part in the presence the store keeps (:mod:`ledger.presence`): its
    beat while it holds connections, and the release of the holds of processes that were
    killed (silent for the lease) and whose players never came back, so their seats are
    disconnected as seed 002 says. Ticked from the feed's thread."""

    def __init__(
        self,
        app: Casino,
        worker: str,
        holding: Callable[[], bool],
        wall: Callable[[], datetime],
        clock: Callable[[], float],
        submit: Callable[[Callable[[], None]], object],
        every: float = BEAT_SECONDS,
    ) -> None:
        self.app, self.worker, self.holding = app, worker, holding
        self.wall, self.clock, self.submit, self.every = wall, clock, submit, every
        self.seen = 0
        self.holders: dict[Key, dict[str, str]] = {}
        """(session, table) -> process -> since when, as the log says."""
        self.beats: dict[str, str] = {}
        self.reaped: set[str] = set()
        self._next = 0.0

    def now(self) -> str:
        return self.wall().isoformat(timespec="milliseconds")

    def tick(self) -> None:
        if self.clock() < self._next:
            return
        self._next = self.clock() + self.every
        if self.holding():
            beat = WorkerBeat(self.worker, self.now())
            self.submit(partial(self._command, f"beat-{entropy.uuid4().hex}", beat))
        self.read()
        self.reap()

    def read(self) -> None:
        """Follow the presence events written since the last look (every process's)."""
        top = int(self.app.recorder.max_notification_id() or 0)
        while self.seen < top:
            page = self.app.recorder.select_notifications(
                start=self.seen + 1, limit=1000, stop=top, topics=PRESENCE_TOPICS
            )
            for n in page:
                e: Any = self.app.mapper.to_domain_event(n)
                if n.topic in (contracts.PRESENCE_WORKER_STARTED, contracts.PRESENCE_WORKER_BEAT):
                    self.beats[e.worker] = e.at
                    continue
                key = (e.session_id, e.table)
                if n.topic == contracts.TABLE_PRESENCE_RELEASED:
                    held = self.holders.get(key, {})
                    held.pop(e.worker, None)
                    if not held:
                        self.holders.pop(key, None)
                else:
                    self.holders.setdefault(key, {})[e.worker] = e.at
            self.seen = top if len(page) < 1000 else page[-1].id

    def reap(self) -> None:
        """Release, for every seat held only by silent processes, their holds (the
        ledger disconnects it once none is left); the request id names the hold, so
        processes reaping at once do it once."""
        now = self.now()
        for (session, table), held in list(self.holders.items()):
            silent = {
                w: since
                for w, since in held.items()
                if w != self.worker and not fresh(max(since, self.beats.get(w, since)), now)
            }
            if len(silent) < len(held):
                continue  # a live process holds it: its own release decides
            for worker, since in silent.items():
                rid = f"reap-{worker}-{since}"
                if rid in self.reaped:
                    continue
                self.reaped.add(rid)
                self.submit(partial(self._command, rid, ReleaseTable(session, table, worker, now)))

    def _command(self, request_id: str, cmd: Command[Any]) -> None:
        try:
            self.app.command(request_id, cmd)
        except Exception as e:  # tried again at the next look (a reap) or beat
            log.warning("presence %s failed: %r", cmd.name, e)
            if isinstance(cmd, ReleaseTable):
                self.reaped.discard(request_id)
