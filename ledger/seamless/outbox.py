"""At least once for credits and rollbacks: the outbox sender.

The outbox is the log: every ``WalletCallQueued`` event (a win, or the rollback of a voided
or unknown debit, written in the same transaction as the settlement) without a delivery
recorded for its transaction (:class:`~ledger.seamless.delivery.WalletDelivery`) is
pending. The sender rebuilds that list from the log at start, follows the log for new
entries, sends each with the same transaction id (one attempt at a time, on a pool of
threads, so the wallet's latency overlaps), retries with exponential backoff and jitter
(:class:`wallet.delivery.RetryPolicy`) until the wallet acknowledges (a duplicate counts),
and records the deliveries as events (``RecordDeliveries``, one command for all the calls
acknowledged since the last one). A signed refusal that the same
call will always get is recorded as ``rejected`` (reconciliation lists it for a person).
"""

from __future__ import annotations

import hashlib
import logging
import random as _random
import threading
import time as _time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ledger.casino import Casino
from ledger.seamless.book import Entry, OpenItems
from ledger.seamless.commands import RecordDeliveries
from ledger.seamless.wire import from_wire
from wallet.client import WalletClient
from wallet.delivery import Attempt, AttemptKind, RetryPolicy

log = logging.getLogger("croupier.wallet")
_AWAITING_RECORD = float("inf")


@dataclass
class _Pending:
    entry: Entry
    attempts: int = 0
    due: float = 0.0
    sending: bool = False


class Outbox:
    def __init__(
        self,
        casino: Casino,
        wallets: Mapping[str, WalletClient],
        open_items: OpenItems,
        *,
        policy: RetryPolicy | None = None,
        workers: int = 32,
        poll_seconds: float = 0.05,
        clock: Callable[[], float] = _time.monotonic,
        random: Callable[[], float] = _random.random,
    ) -> None:
        self.casino = casino
        self.wallets = wallets
        self.open_items = open_items
        self.policy = policy or RetryPolicy()
        self.poll_seconds = poll_seconds
        self._clock, self._random = clock, random
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._workers = workers
        self.every_poll: list[Callable[[], object]] = []  # e.g. the gate's resolve_stale
        self._done: list[dict[str, object]] = []  # acknowledged or rejected, to record
        self.delivered = 0

    # -- what is pending ---------------------------------------------------------------------

    def catch_up(self) -> int:
        """Bring the pending list up to date with the log; the number pending."""
        book = self.open_items.catch_up()
        pending = {e.transaction_id: e for e in book.pending_deliveries()}
        with self._lock:
            for tid in list(self._pending):
                if tid not in pending and not self._pending[tid].sending:
                    del self._pending[tid]
            for tid, entry in pending.items():
                self._pending.setdefault(tid, _Pending(entry))
            return len(self._pending)

    def pending(self) -> list[str]:
        with self._lock:
            return sorted(self._pending)

    def wake(self) -> None:
        self._wake.set()

    # -- sending -----------------------------------------------------------------------------

    def send_due(self, submit: Callable[[_Pending], object] | None = None) -> int:
        """Send every pending call whose retry is due; the number sent."""
        now = self._clock()
        with self._lock:
            due = [p for p in self._pending.values() if not p.sending and p.due <= now]
            for p in due:
                p.sending = True
        for p in due:
            if submit is None:
                self._attempt(p)
            else:
                submit(p)
        return len(due)

    def _attempt(self, p: _Pending) -> None:
        entry = p.entry
        try:
            client = self.wallets.get(entry.operator)
            if client is None:
                attempt = Attempt(AttemptKind.RETRY, f"no wallet client for {entry.operator!r}")
            else:
                attempt = client.send(from_wire(entry.transaction))
            p.attempts += 1
            if attempt.kind is AttemptKind.RETRY:
                wait = self.policy.delay(p.attempts, self._random)
                log.warning(
                    "wallet %s %s attempt %d failed: %s; retry in %.3f s",
                    entry.call,
                    entry.transaction_id,
                    p.attempts,
                    attempt.cause,
                    wait,
                )
                with self._lock:
                    p.due = self._clock() + wait
                return
            state = "acknowledged" if attempt.kind is AttemptKind.ACKNOWLEDGED else "rejected"
            if state == "rejected":
                log.error(
                    "wallet %s %s rejected: %s; left for reconciliation",
                    entry.call,
                    entry.transaction_id,
                    attempt.cause,
                )
            with self._lock:
                p.due = _AWAITING_RECORD  # not sent again before it is recorded
                self._done.append(
                    {
                        "transaction_id": entry.transaction_id,
                        "session_id": entry.session_id,
                        "call": entry.call,
                        "state": state,
                        "attempts": p.attempts,
                        "cause": attempt.cause,
                        "wallet_balance": attempt.balance,
                    }
                )
        except Exception as e:  # never lose an entry: it stays pending and is retried
            log.exception("wallet %s %s: sending failed: %r", entry.call, entry.transaction_id, e)
            with self._lock:
                p.due = self._clock() + self.policy.delay(max(1, p.attempts), self._random)
        finally:
            p.sending = False

    def record(self) -> int:
        """Record every delivery finished since the last call, in one command; the number
        recorded. If it fails they stay pending in the log and are sent again (a duplicate
        is acknowledged), so nothing is lost."""
        with self._lock:
            done, self._done = self._done, []
        if not done:
            return 0
        ids = "|".join(sorted(str(d["transaction_id"]) for d in done))
        request = "deliveries:" + hashlib.sha256(ids.encode()).hexdigest()
        try:
            self.casino.command(request, RecordDeliveries(tuple(done)))
        except Exception as e:
            log.exception("wallet outbox: recording %d deliveries failed: %r", len(done), e)
            with self._lock:
                for d in done:
                    p = self._pending.get(str(d["transaction_id"]))
                    if p is not None:
                        p.due = self._clock()
            return 0
        with self._lock:
            for d in done:
                self._pending.pop(str(d["transaction_id"]), None)
            self.delivered += len(done)
        return len(done)

    def drain(self, max_rounds: int = 1000, sleep: Callable[[float], None] = _time.sleep) -> int:
        """Deliver everything pending in this thread (tests, tools): catch up, send what is
        due, wait for the next retry; the number still pending after ``max_rounds``."""
        for _ in range(max_rounds):
            self.record()
            if not self.catch_up():
                return 0
            if not self.send_due():
                with self._lock:
                    dues = [p.due for p in self._pending.values() if p.due != _AWAITING_RECORD]
                sleep(max(0.0, min(dues, default=0.0) - self._clock()))
        return self.catch_up()

    # -- the background sender (``croupier serve``) ------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="croupier-wallet")
        self._thread = threading.Thread(target=self._run, name="croupier-outbox", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self._pool is not None
        pool = self._pool
        while not self._stop.is_set():
            try:
                self.record()
                for job in self.every_poll:
                    job()
                self.catch_up()
                self.send_due(lambda p: pool.submit(self._attempt, p))
            except Exception as e:  # the store may be briefly unavailable: keep going
                log.exception("wallet outbox: %r", e)
            self._wake.wait(self.poll_seconds)
            self._wake.clear()

    def stop(self) -> None:
        """Stop sending (what is pending stays in the log for the next start)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self.record()
