"""The read side's runner: a thread that keeps every view close behind the log.

Asynchronous, with a bounded lag: every ``poll`` seconds it applies everything up to the
log's head (this worker's writes and every other worker's), at most
:data:`ledger.readside.projection.BATCH` events a transaction. It does not wake on each
commit: under load a pass then finds many commands' events at once, and the views cost a
small share of the commands' CPU (a pass per commit cost about as much as the command).
The command path never waits on it (a command costs the same with or without views); a
read that needs a newer position catches the view up itself
(:meth:`ledger.readside.ReadSide.ready`). With several workers on one log only the
holder of the runners' lease runs its passes (``on_duty``, :mod:`ledger.runner_lease`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ledger.readside import ReadSide

log = logging.getLogger("croupier.readside")


class Runner:
    def __init__(
        self, readside: ReadSide, poll: float = 0.1, on_duty: Callable[[], bool] | None = None
    ) -> None:
        self.readside = readside
        self.poll = poll
        self.on_duty = on_duty or (lambda: True)
        """Whether this process catches the views up (:mod:`ledger.runner_lease`: with
        several workers, the holder of the runners' lease)."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0
        self.last_error: str | None = None

    def wake(self, _position: int = 0) -> None:
        self._wake.set()

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="croupier-readside", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                if self.on_duty():  # else the holder catches up every worker's events
                    self.readside.catch_up()
                    self.passes += 1
                self.last_error = None
            except Exception as e:  # the store away, a tampered row: say so, try again
                if self.last_error != repr(e):
                    log.error("read side: %r", e)
                self.last_error = repr(e)
                self._stop.wait(1.0)
            self._wake.wait(self.poll)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
