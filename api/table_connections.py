"""seed 002 "Disconnessione" follows the real connection: a session's stream of a table.

A session's first stream to a table sends the ledger's ``Connect`` for its seat; when the
last one ends, ``Disconnect`` is sent once ``grace`` seconds have passed without a new
stream (a reconnect within the grace changes nothing in the log). So a player whose
stream is lost before the betting deadline, for longer than the grace, has the bets
refunded; after it, the seat gets the automatic actions (the ledger's handlers apply the
rule; this module only decides when the connection counts as lost).

Commands run on ``submit`` (a worker pool in the server, inline in tests), at most one at
a time per (session, table), always toward the latest wanted state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("croupier.stream")

Key = tuple[str, str]
"""(session id, table)."""
Send = Callable[[str, str, bool], None]
"""Sends Connect (True) or Disconnect (False) for (session, table) to the ledger."""


class Connections:
    def __init__(
        self,
        send: Send,
        grace: float,
        clock: Callable[[], float],
        submit: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        self.send = send
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
        self.submit(lambda: self._deliver(key))

    def _deliver(self, key: Key) -> None:
        sent: bool | None = None
        while True:
            with self.lock:
                want = self._wanted[key]
                if want is sent:
                    self._running.discard(key)
                    if key not in self.connected and key not in self.pending:
                        self._wanted.pop(key, None)
                    return
            try:
                self.send(key[0], key[1], want)
            except Exception as e:  # the stream goes on; the runner's timers still apply
                log.warning("table %s session %s: connected=%s failed: %r", *key[::-1], want, e)
            sent = want
