"""A worker learns of another's commit from PostgreSQL's notification, not at its next poll
(ledger.commit_listener; the table feeds of `croupier serve --workers N` use it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ledger.commit_listener import CommitListener
from tests.conftest import Store


def test_another_process_commit_wakes_the_listener(
    store: Store, open_session: Callable[..., str]
) -> None:
    ours, theirs = store.open(), store.open()  # two processes' applications, one log
    woken = threading.Event()
    listener = CommitListener(ours.recorder, woken.set)
    if store.kind == "sqlite":  # one process and no notifications: polling alone
        assert listener.start() is False
        assert listener.channel is None
        return
    assert listener.start() is True
    try:
        assert listener.listening.wait(10), "the listener never listened"
        quiet_by = time.monotonic() + 20  # the applications' own start-up writes end
        while woken.wait(0.5):
            woken.clear()
            assert time.monotonic() < quiet_by, "the log never fell quiet"
        open_session(ours, player="own")  # its own commits: it woke its feeds already
        assert not woken.wait(1.0), "woken by this process's own commit"
        started = time.monotonic()
        open_session(theirs)  # committed by the other application's connection
        assert woken.wait(5), "another process's commit did not wake the listener"
        # far inside the table streams' poll interval (0.25 s) on a quiet machine; the
        # bound here is loose for a loaded one
        assert time.monotonic() - started < 5
    finally:
        listener.stop()
    assert listener._thread is not None and not listener._thread.is_alive()
    # the connection went back to the pool listening to nothing
    with ours.recorder.datastore.get_connection() as conn:
        assert conn.execute("SELECT pg_listening_channels()").fetchall() == []
