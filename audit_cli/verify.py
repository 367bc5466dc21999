"""Offline verification of the raw log: signatures, hash chains, checkpoints and books.

Needs only the rows and the public keys (``ledger.envelope`` and ``ledger.merkle`` are
standalone modules documenting the formats; no application is started). Signature checks
run in parallel worker processes (``audit_cli.chunk``); chains, the Merkle tree and the
books are checked in notification order in the parent (``audit_cli.checker``). With
``verify_db`` each worker reads its own range of rows and checks the chains and books
inside it too, handing back boundary facts and sums (``chunk.summarise``); the parent
checks those against the log's order and re-checks a chunk row by row whenever they do
not settle it (``Checker.feed_summary``).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import islice
from multiprocessing.pool import AsyncResult
from typing import Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.checker import Checker, Report
from audit_cli.chunk import Checked, ChunkChecker, ChunkSetup, ChunkSummary, summarise
from audit_cli.findings import Finding
from audit_cli.reexec import ChunkGames, Reexec, preload
from audit_cli.rows import (
    TRUST_TOPICS,
    Row,
    chunk_bounds,
    close_connection,
    is_sqlite,
    read_aggregate,
    read_range,
    read_snapshot_rows,
    read_trust_rows,
)
from audit_cli.snapshots import SnapshotCheck
from ledger import envelope

CHUNK = 2048
"""Rows a worker checks at a time: a power of two, so each chunk's Merkle subtrees (hashed
in the worker, ``merkle.subtree_levels``) are whole nodes of the log's tree."""
__all__ = ["Finding", "Report", "verify", "verify_db"]

Learned = tuple[bytes | None, dict[str, bytes]]
"""The log id and every key the trust rows read so far name (:func:`trust_candidates`)."""


class ChunkOutcome(NamedTuple):
    """A worker's answer for one chunk: its summary, or (when the parent must see every
    row) its rows without their state but for those a snapshot check replays, with their
    results; and its game rows reduced (None without re-execution)."""

    summary: ChunkSummary | None
    rows: list[Row]
    results: list[Checked]
    games: ChunkGames | None


def trust_candidates(rows: Iterable[Row]) -> Learned:
    """The log id and every key the trust rows name (not yet checked: the parent checks
    the key history in order; the workers only need the keys to check signatures)."""
    log_id: bytes | None = None
    keys: dict[str, bytes] = {}
    for row in rows:
        if row.topic not in TRUST_TOPICS or not isinstance(row.state, bytes):
            continue
        try:
            doc = json.loads(envelope.decode(row.state).payload)
            if row.topic == envelope.GENESIS_TOPIC and log_id is None:
                log_id = bytes.fromhex(doc["log_id"])
                for kid, pub in (doc.get("legacy") or {}).get("keys", {}).items():
                    keys[str(kid)] = bytes.fromhex(pub)
            keys[str(doc["kid"])] = bytes.fromhex(doc["public_key"])
        except (ValueError, KeyError, TypeError, AttributeError, envelope.EnvelopeError):
            continue
    return log_id, {k: v for k, v in keys.items() if len(v) == 32}


def _summary_job(setup: ChunkSetup, args: tuple[str, int, int]) -> ChunkOutcome:
    """Worker side of ``verify_db``: read a range of rows, check them, and hand back the
    chunk's boundary facts (or, when the chunk needs it, every row, without its state but
    for those a snapshot check replays), with its game rows reduced and its whole rounds
    re-run (``audit_cli.reexec.chunk_games``)."""
    rows = read_range(*args)
    results, games = ChunkChecker(setup).check(rows)
    summary = summarise(rows, results, setup.wanted) if rows else None
    if summary is not None:
        return ChunkOutcome(summary, [], [], games)
    return ChunkOutcome(None, [_light(r, setup.wanted) for r in rows], results, games)


def _check_chunk_games(
    setup: ChunkSetup, rows: list[Row]
) -> tuple[list[Checked], ChunkGames | None]:
    """Worker side of ``verify``: the chunk's row checks and its game rows."""
    return ChunkChecker(setup).check(rows)


def _light(r: Row, wanted: dict[str, int]) -> Row:
    newest = wanted.get(r.originator_id)
    if newest is not None and type(r.version) is int and r.version <= newest:
        return r
    # Interned topics: each is pickled once per chunk on its way back to the parent.
    topic = sys.intern(r.topic) if type(r.topic) is str else r.topic
    return Row(r.notification_id, r.originator_id, r.version, topic, b"")


def _aggregate(db: str, oid: str) -> list[Row]:
    """One aggregate's rows from the store (a dropped round re-opened: ``Reexec``)."""
    try:
        return read_aggregate(db, oid)
    except ValueError:
        return []  # not a UUID: no aggregate of the log


def _raw(public_keys: dict[str, Ed25519PublicKey]) -> dict[str, bytes]:
    return {kid: k.public_bytes_raw() for kid, k in public_keys.items()}


def verify_db(
    db: str,
    public_keys: dict[str, Ed25519PublicKey] | None = None,
    *,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    anchor: dict[str, Any] | None = None,
    pin: str | None = None,
    reexecute: bool = True,
) -> Report:
    """Like :func:`verify`, but the worker processes read the rows themselves. The trust
    rows are read first (by topic) so every worker knows the log id and the keys."""
    jobs = jobs or os.cpu_count() or 1
    log_id, named = trust_candidates(read_trust_rows(db))
    gaps = is_sqlite(db)
    snapshots = read_snapshot_rows(db)
    raw = {**_raw(public_keys or {}), **named}
    checker = Checker(public_keys, anchor, pin, check_gaps=gaps)
    checker.reexec = Reexec(partial(_aggregate, db)) if reexecute else None
    snapshot_check = _snapshot_check(snapshots, checker)
    wanted = snapshot_check.wanted if snapshot_check else {}
    setup = ChunkSetup(raw, log_id, wanted, reexecute)
    bounds = list(chunk_bounds(db, CHUNK))

    def feed(lo: int, hi: int, outcome: ChunkOutcome) -> None:
        rows, results = outcome.rows, outcome.results
        if outcome.games is not None and checker.reexec is not None:
            checker.reexec.feed(outcome.games)
        if outcome.summary is not None:
            count = checker.feed_summary(outcome.summary)
            if count is not None:
                if progress:
                    progress(count)
                return
            # The boundary facts do not hold: every row, here, for the exact findings.
            rows = read_range(db, lo, hi, cached=False)
            results = ChunkChecker(ChunkSetup(raw, log_id, wanted, False)).check(rows)[0]
            rows = [_light(r, wanted) for r in rows]
        checker.feed(rows, results)
        if progress:
            progress(len(rows))

    if jobs <= 1:
        try:
            for lo, hi in bounds:
                feed(lo, hi, _summary_job(setup, (db, lo, hi)))
        finally:
            close_connection(db)
        return _finish(checker, snapshot_check)
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    if reexecute:
        preload()
    with ctx.Pool(jobs) as pool:
        jobs_args = ((db, a, b) for a, b in bounds)
        outcomes = pool.imap(partial(_summary_job, setup), jobs_args, chunksize=1)
        for (lo, hi), outcome in zip(bounds, outcomes, strict=True):
            feed(lo, hi, outcome)
    return _finish(checker, snapshot_check)


def _snapshot_check(snapshots: list[Row] | None, checker: Checker) -> SnapshotCheck | None:
    if not snapshots:
        return None
    check = SnapshotCheck(snapshots, checker)
    checker.observer = check.observe
    return check


def _finish(checker: Checker, snapshot_check: SnapshotCheck | None) -> Report:
    if snapshot_check is not None:
        snapshot_check.finish()
        checker.tally.snapshots = snapshot_check.checked
    return checker.finish()


def _chunks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield chunk


# -- the whole log ---------------------------------------------------------------------


def verify(
    rows: Iterable[Row],
    public_keys: dict[str, Ed25519PublicKey] | None = None,
    *,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    anchor: dict[str, Any] | None = None,
    pin: str | None = None,
    check_gaps: bool = False,
    learned: Learned | None = None,
    snapshots: list[Row] | None = None,
    reexecute: bool = True,
) -> Report:
    """Verify every row. ``public_keys`` is the local keyring (for a log without genesis,
    and to check an unpinned genesis against); ``pin`` the genesis key's fingerprint an
    auditor pinned, which makes the log's own key history the only source of keys.
    ``anchor`` is a tree head published earlier (``tree_size``, ``root_hash``) that the
    log must still contain: it catches a cut tail together with its checkpoints.
    ``snapshots`` (``rows.read_snapshot_rows``) are checked against the replay of the
    events they summarise, on this same pass. ``reexecute`` re-runs every round and
    compares its money with what the rules give (``audit_cli.reexec``)."""
    jobs = jobs or os.cpu_count() or 1
    checker = Checker(public_keys, anchor, pin, check_gaps=check_gaps)
    checker.reexec = Reexec() if reexecute else None
    snapshot_check = _snapshot_check(snapshots, checker)
    log_id, known = learned or (None, {})
    known = {**_raw(public_keys or {}), **known}

    def setup_for(chunk: list[Row]) -> ChunkSetup:
        # Keys named by trust rows in this chunk sign the rows after them.
        nonlocal log_id
        if any(r.topic in TRUST_TOPICS for r in chunk if type(r.topic) is str):
            new_id, named = trust_candidates(chunk)
            log_id = log_id or new_id
            known.update(named)
        return ChunkSetup(dict(known), log_id, {}, reexecute)

    def feed(chunk: list[Row], outcome: tuple[list[Checked], ChunkGames | None]) -> None:
        results, games = outcome
        if games is not None and checker.reexec is not None:
            checker.reexec.feed(games)
        checker.feed(chunk, results)
        if progress:
            progress(len(chunk))

    if jobs <= 1:
        for chunk in _chunks(rows, CHUNK):
            feed(chunk, _check_chunk_games(setup_for(chunk), chunk))
    else:
        ctx = multiprocessing.get_context("spawn" if os.name != "posix" else "fork")
        if reexecute:
            preload()
        with ctx.Pool(jobs) as pool:
            pending: list[tuple[list[Row], AsyncResult[tuple[list[Checked], ChunkGames | None]]]]
            pending = []
            for chunk in _chunks(rows, CHUNK):
                args = (setup_for(chunk), chunk)
                pending.append((chunk, pool.apply_async(_check_chunk_games, args)))
                if len(pending) >= jobs * 3:
                    c, res = pending.pop(0)
                    feed(c, res.get())
            for c, res in pending:
                feed(c, res.get())
    return _finish(checker, snapshot_check)
