"""Wake at once when any process commits to a PostgreSQL log.

Every insert of the library's PostgreSQL recorder (and of ours, which keeps its insert
path: :class:`ledger.store.AppendOnlyPostgresRecorder`) sends ``NOTIFY`` on the
recorder's channel in its transaction, so PostgreSQL tells every listening connection
when the commit lands. A :class:`CommitListener` holds one connection that ``LISTEN``\\ s
on that channel, in a thread of its own, and calls ``wake`` for each notification
that another process sent (the recorder notes the sessions its own inserts notify from:
a process wakes its feeds on its own commits already, and a second wake for each of
them was a look at the log for nothing): a
worker of ``croupier serve --workers N`` (or another host on the same database) learns of
another's rows a few milliseconds after their commit, where polling the log's newest
position learns of them up to a poll interval later. The writers pay nothing more: the
notification is already sent.

Polling stays as the safety net (a lost connection, a notification delivered while the
listener reconnects): the listener only makes the next look sooner. SQLite has no
notifications and one process: there, :meth:`CommitListener.start` says no.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("croupier.listen")

RETRY_SECONDS = 1.0
"""How long the listener waits before connecting again after its connection failed."""


class CommitListener:
    def __init__(self, recorder: Any, wake: Callable[[], None], name: str = "croupier-listen"):
        self.recorder = recorder
        self.wake = wake
        self.name = name
        self.listening = threading.Event()
        """Set while a connection is listening (tests wait for it)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def channel(self) -> str | None:
        """The recorder's notification channel; None if its store sends none (SQLite)."""
        channel = getattr(self.recorder, "channel_name", None)
        datastore = getattr(self.recorder, "datastore", None)
        if not isinstance(channel, str) or not hasattr(datastore, "get_connection"):
            return None
        return channel

    def start(self) -> bool:
        """Listen from a thread of its own; False (and nothing started) where the store
        sends no notifications."""
        if self.channel is None:
            return False
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except Exception as e:  # polling still finds the rows; try again shortly
                log.warning("listening for commits on %s: %r", self.channel, e)
            self.listening.clear()
            self._stop.wait(RETRY_SECONDS)

    def _listen(self) -> None:
        from psycopg.sql import SQL, Identifier

        listen = SQL("LISTEN {0}").format(Identifier(str(self.channel)))
        own: set[int] = getattr(self.recorder, "own_backends", set())
        with self.recorder.datastore.get_connection() as conn:
            conn.execute(listen)
            try:
                self.listening.set()
                while not self._stop.is_set():
                    # at most half a second per look, so that stop() is seen
                    for note in conn.notifies(timeout=0.5):
                        if note.pid in own:
                            continue  # this process's commit: it woke its feeds already
                        self.wake()
                        if self._stop.is_set():
                            break
            finally:
                # the connection goes back to the pool: it must not keep collecting
                # notifications that nobody reads
                if not conn.closed:
                    conn.execute("UNLISTEN *")
