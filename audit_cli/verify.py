"""Offline verification of the raw log: signatures, hash chains, checkpoints and books.

Needs only the rows and the public keys (``ledger.envelope`` and ``ledger.merkle`` are
standalone modules documenting the formats; no application is started). Signature checks
run in parallel worker processes; chains, the Merkle tree and the books are checked in
notification order in the parent. With ``verify_db`` each worker reads its own range of
rows and checks the chains and books inside it too, handing back boundary facts and sums
(``_summarise``); the parent checks those against the log's order and re-checks a chunk
row by row whenever they do not settle it (``Checker.feed_summary``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import struct
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import islice
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.checker import (
    ACCOUNT_OPENED_TOPIC,
    CHECKPOINT_TOPIC,
    INTERNAL_LEDGERS,
    REQUEST_TOPIC,
    SESSION_CLOSED_TOPIC,
    SESSION_OPENED_TOPIC,
    TRUST_TOPICS,
    Books,
    Checker,
    Finding,
    Report,
)
from audit_cli.reexec import ChunkGames, Reexec, chunk_games, is_game_topic, preload
from audit_cli.rows import (
    MAX_ROW_ID,
    NON_CANONICAL,
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
from ledger import envelope, merkle

CHUNK = 2048
"""Rows a worker checks at a time: a power of two, so each chunk's Merkle subtrees (hashed
in the worker, ``merkle.subtree_levels``) are whole nodes of the log's tree."""
__all__ = ["Finding", "Report", "verify", "verify_db"]


# -- per-row work (runs in worker processes) -------------------------------------------

_KEYS: dict[str, Ed25519PublicKey] = {}
_LOG_ID: bytes | None = None
_LEARNED: object = None
_WANTED: dict[str, int] = {}
"""Aggregate id -> newest snapshot version: those events go back to the parent whole
(the snapshot checks replay them); every other row goes back without its state."""
_REEXEC = True
"""Whether the workers pick out the game rows and re-run rounds (``audit_cli.reexec``)."""
_PAYLOADS: dict[int, bytes] = {}
"""The payloads of the game rows of the chunk ``_check_rows`` checked last (by index)."""


def _init(
    raw_keys: dict[str, bytes],
    log_id: bytes | None = None,
    wanted: dict[str, int] | None = None,
    reexecute: bool = True,
) -> None:
    global _KEYS, _LOG_ID, _WANTED, _REEXEC
    _KEYS = {kid: Ed25519PublicKey.from_public_bytes(raw) for kid, raw in raw_keys.items()}
    _LOG_ID = log_id
    _WANTED = wanted or {}
    _REEXEC = reexecute


_FIELDS = (
    "movement",
    "balance",
    "final_balance",
    "seq",
    "tree_size",
    "root_hash",
    "timestamp_ms",
    "kid",
    "signature",
    "player_id",
    "digest",
    "log_id",
    "public_key",
    "old_kid",
    "proof",
    "legacy",
)
_EXTRACT_TOPICS = frozenset(
    (
        CHECKPOINT_TOPIC,
        SESSION_CLOSED_TOPIC,
        SESSION_OPENED_TOPIC,
        ACCOUNT_OPENED_TOPIC,
        REQUEST_TOPIC,
        envelope.GENESIS_TOPIC,
        envelope.ROTATED_TOPIC,
    )
)


def _extract(payload: bytes) -> dict[str, Any]:
    """The fields the parent checks, exactly as ``json.loads`` reads them (raises
    ``ValueError`` or ``TypeError`` where reading them with it would). orjson reads them
    three to four times faster; it reads an integer beyond 64 bits as a float and refuses
    NaN, Infinity and lone surrogates, so a payload it refuses, or whose fields hold a
    float (croupier's events hold none), is read by the standard library instead."""
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        doc = json.loads(payload)
        return {k: doc[k] for k in _FIELDS if k in doc}
    extract = {k: doc[k] for k in _FIELDS if k in doc}
    if _has_float(extract):
        doc = json.loads(payload)
        return {k: doc[k] for k in _FIELDS if k in doc}
    return extract


_SCALARS = frozenset((str, int, bool, type(None)))


def _has_float(value: Any) -> bool:
    """Whether a float is anywhere in ``value`` (plain loops: a generator per level cost
    as much as the JSON reading itself)."""
    t = type(value)
    if t is float:
        return True
    if t is dict:
        value = value.values()
    elif t is not list:
        return False
    for v in value:  # noqa: SIM110 (a generator here is what cost the time)
        if type(v) not in _SCALARS and _has_float(v):
            return True
    return False


Checked = tuple[str, bytes, bytes, bytes, "dict[str, Any] | None", str, int]
"""(status, event hash, prev hash, Merkle leaf hash, extracted fields, kid, format)."""


def _malformed(row: Row) -> str | None:
    """The name of the check a non-canonical row fails (None for a well-formed row)."""
    if type(row.notification_id) is not int or not 1 <= row.notification_id <= MAX_ROW_ID:
        return "row-id"
    if row.originator_id.startswith(NON_CANONICAL):
        return "row-originator-id"
    if type(row.version) is not int or not 1 <= row.version <= envelope.MAX_VERSION:
        return "row-version"
    if type(row.topic) is not str:
        return "row-topic"
    if not isinstance(row.state, bytes):  # e.g. text written into the state column
        return "envelope"
    return None


Pending = tuple[int, str, bytes, bytes, bytes, bytes, int]
"""A row whose signature is to be checked: (its index, key id, prev hash, signature,
payload, signing message, format)."""


def _check_rows(rows: list[Row]) -> list[Checked]:
    """Check each row's form and signature (against the key it names: which key was valid
    at its position is the parent's business). Every row's signing message is built
    first and the signatures are then checked one after another in a tight loop:
    interleaving the per-row Python with each Ed25519 check cost 15-20 us a row more
    (the check's code and tables no longer warm in the core's caches)."""
    results: list[Checked | None] = []
    pending: list[Pending] = []
    log_id = _LOG_ID or bytes(16)
    decode, signing_message = envelope.decode, envelope.signing_message
    leaf_hash, sha256, pack = merkle.leaf_hash, hashlib.sha256, struct.pack
    # A format 2 envelope is read here, its message built as ``envelope.signing_message``
    # builds it (byte for byte; 3.5 us a row less than the two calls): the same bytes
    # and the same errors. Anything else goes through the envelope module.
    prefix = _EVENT_DOMAIN_2 + log_id if len(log_id) == 16 else None
    topics: dict[str, bytes] = {}
    for i, row in enumerate(rows):
        bad = _malformed(row)
        if bad is not None:
            results.append((bad, b"", b"", leaf_hash(repr(tuple(row)).encode()), None, "", 0))
            continue
        state = row.state
        try:
            if (
                prefix is not None
                and state[:5] == _MAGIC_2
                and len(state) > 5
                and len(state) >= 102 + state[5]
            ):
                n = state[5]
                p = 6 + n
                kid_bytes = state[6:p]
                if not kid_bytes.isascii():
                    raise envelope.EnvelopeError("key id is not ascii")
                oid = bytes.fromhex(row.originator_id.replace("-", ""))
                if len(oid) != 16:  # (signing_message refuses it: not a UUID)
                    raise ValueError(f"{row.originator_id!r} is not a UUID")
                topic = topics.get(row.topic)
                if topic is None:
                    t = row.topic.encode()
                    topic = topics[row.topic] = pack(">H", len(t)) + t
                payload = state[p + 96 :]
                prev = state[p : p + 32]
                msg = b"".join(
                    (
                        prefix,
                        oid,
                        pack(">Q", row.version),
                        topic,
                        sha256(payload).digest(),
                        prev,
                        state[5:p],
                    )
                )
                kid = kid_bytes.decode("ascii")
                pending.append((i, kid, prev, state[p + 32 : p + 96], payload, msg, 2))
            else:
                env = decode(state)
                msg = signing_message(
                    bytes.fromhex(row.originator_id.replace("-", "")),
                    row.version,
                    row.topic,
                    env.payload,
                    env.prev_hash,
                    env.kid,
                    log_id if env.format == 2 else None,
                )
                pending.append(
                    (i, env.kid, env.prev_hash, env.signature, env.payload, msg, env.format)
                )
        except (envelope.EnvelopeError, ValueError, UnicodeError):
            results.append(("envelope", b"", b"", leaf_hash(state), None, "", 0))
            continue
        results.append(None)
    statuses = _signatures(pending)
    event_hash, intern = envelope.event_hash, sys.intern
    payloads = _PAYLOADS
    payloads.clear()
    games = _REEXEC
    for (i, kid, prev, signature, payload, msg, fmt), status in zip(pending, statuses, strict=True):
        h = event_hash(msg, signature)
        if games and is_game_topic(rows[i].topic):
            payloads[i] = payload  # for ``chunk_games``, on this same chunk
        extract = None
        if rows[i].topic in _EXTRACT_TOPICS or b'"movement"' in payload:
            try:
                extract = _extract(payload)
            except (ValueError, TypeError):
                extract = {"unparseable": True}
        # Interned, so the results pickled back to the parent carry each key id once a chunk.
        results[i] = (status, h, prev, leaf_hash(h), extract, intern(kid), fmt)
    return results  # type: ignore[return-value]  # every None was replaced above


_MAGIC_2 = envelope.MAGIC
_EVENT_DOMAIN_2 = b"croupier-event/v2\x00"


def _signatures(pending: list[Pending]) -> list[str]:
    """``ok``, ``signature`` or ``unknown-key`` for each row to check."""
    keys = _KEYS
    statuses: list[str] = []
    append = statuses.append
    for _, kid, _, signature, _, msg, _ in pending:
        key = keys.get(kid)
        if key is None:
            append("unknown-key")
            continue
        try:
            key.verify(signature, msg)
            append("ok")
        except InvalidSignature:
            append("signature")
    return statuses


def trust_candidates(
    rows: Iterable[Row],
) -> tuple[bytes | None, dict[str, bytes]]:
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


def _check_chunk(
    rows: list[Row], learned: tuple[bytes | None, dict[str, bytes]] | None = None
) -> list[Checked]:
    global _LEARNED
    if learned is not None and learned != _LEARNED:
        _init(learned[1], learned[0])
        _LEARNED = learned
    return _check_rows(rows)


Summary = tuple[
    int, int, bool, str, bytes, "list[tuple[str, int, bytes, int, bytes]]", Books, "list[bytes]"
]
"""A chunk that needs nothing of the parent but its boundary facts and its books:
(first row id, last row id, ids consecutive, the one key id that signed every row,
Merkle leaf hashes concatenated, per aggregate (id, first version, its prev hash, last
version, its event hash), the chunk's books, the Merkle nodes above its leaves
(``merkle.subtree_levels``))."""


def _summarise(rows: list[Row], results: list[Checked]) -> Summary | None:
    """The chunk as boundary facts, or None when the parent must see every row: a row
    that is not ok (any finding), a format 1 row, a trust row, two key ids, a row a
    snapshot check replays, or a chain that does not link inside the chunk. What is
    left to check (the first link of each aggregate, the key valid here, the gap before
    the first row) only the parent knows; when that fails, it checks the chunk again
    row by row (``Checker.feed_summary``), so the findings are exactly the same."""
    signer = ""
    leaves: list[bytes] = []
    chains: dict[str, list[Any]] = {}
    money: list[Any] = []
    last_id = -1
    consecutive = True
    wanted = _WANTED
    for i, (row, (status, h, prev, leaf, extract, kid, fmt)) in enumerate(
        zip(rows, results, strict=True)
    ):
        n, oid, version, topic, _ = row
        if status != "ok" or fmt != 2 or topic in TRUST_TOPICS:
            return None
        if kid != signer:
            if signer:
                return None
            signer = kid
        if wanted:
            newest = wanted.get(oid)
            if newest is not None and version <= newest:
                return None
        if n != last_id + 1 and i:
            consecutive = False
        last_id = n
        chain = chains.get(oid)
        if chain is None:
            chains[oid] = [oid, version, prev, version, h]
        elif version != chain[3] + 1 or prev != chain[4]:
            return None
        else:
            chain[3], chain[4] = version, h
        leaves.append(leaf)
        if extract is not None:
            money.append((i, row, extract))
    books = _books(money)
    if books is None:
        return None
    first_id = rows[0].notification_id
    facts = [(c[0], c[1], c[2], c[3], c[4]) for c in chains.values()]
    levels = merkle.subtree_levels(leaves)
    return first_id, last_id, consecutive, signer, b"".join(leaves), facts, books, levels


def _books(money: list[tuple[int, Row, dict[str, Any]]]) -> Books | None:
    """The chunk's books, as ``Checker._money_and_checkpoints`` would record them row by
    row, or None on anything it would report (the parent then feeds every row)."""
    deltas: dict[str, int] = {}
    lows: dict[str, int] = {}
    currencies: dict[str, str] = {}
    players: list[tuple[str, str]] = []
    requests: dict[str, str] = {}
    opened: list[str] = []
    closed: list[str] = []
    into: set[str] = set()
    balances: dict[str, tuple[int, int]] = {}
    moves: list[tuple[int, str, int, str, str, int]] = []
    checkpoints: list[tuple[int, Row, dict[str, Any]]] = []
    for i, row, x in money:
        topic, oid = row.topic, row.originator_id
        if topic == CHECKPOINT_TOPIC:
            checkpoints.append((i, Row(row.notification_id, oid, row.version, topic, b""), x))
            continue
        if topic == ACCOUNT_OPENED_TOPIC and isinstance(x.get("player_id"), str):
            players.append((f"account:{oid}", x["player_id"]))
            continue
        if topic == REQUEST_TOPIC:
            requests[oid] = str(x.get("digest"))
            continue
        if topic == SESSION_OPENED_TOPIC:
            opened.append(oid)
        if topic == SESSION_CLOSED_TOPIC:
            if oid in closed:
                return None
            closed.append(oid)
        mv = x.get("movement")
        if isinstance(mv, dict):
            amount = mv.get("amount")
            src, dst, cur = mv.get("source"), mv.get("destination"), mv.get("currency")
            if type(amount) is not int or amount <= 0 or type(src) is not str:
                return None
            if type(dst) is not str or type(cur) is not str:
                return None
            req = mv.get("request")
            if not isinstance(req, dict) or not req.get("id") or type(req.get("seq")) is not int:
                return None
            moves.append(
                (
                    row.notification_id,
                    oid,
                    row.version,
                    str(req["id"]),
                    str(req.get("digest")),
                    req["seq"],
                )
            )
            if currencies.setdefault(src, cur) != cur or currencies.setdefault(dst, cur) != cur:
                return None
            deltas[src] = deltas.get(src, 0) - amount
            deltas[dst] = deltas.get(dst, 0) + amount
            if dst.startswith("session:"):
                sid = dst.split(":", 1)[1]
                if sid in closed:
                    return None
                into.add(sid)
            if src.startswith(INTERNAL_LEDGERS):
                low = deltas[src]
                if low < lows.get(src, low + 1):
                    lows[src] = low
        if "balance" in x:
            try:
                balances[oid] = (int(x["balance"]), row.notification_id)
            except (TypeError, ValueError, OverflowError):
                return None
    return Books(
        deltas,
        lows,
        currencies,
        players,
        requests,
        opened,
        closed,
        into,
        balances,
        moves,
        checkpoints,
    )


def _summary_job(
    args: tuple[str, int, int],
) -> tuple[Summary | None, list[Row], list[Checked], ChunkGames | None]:
    """Worker side of ``verify_db``: read a range of rows, check them, and hand back the
    chunk's boundary facts (or, when the chunk needs it, every row, without its state but
    for those a snapshot check replays), with its game rows reduced and its whole rounds
    re-run (``audit_cli.reexec.chunk_games``)."""
    rows = read_range(*args)
    results = _check_chunk(rows)
    games = chunk_games(rows, results, _PAYLOADS) if _REEXEC else None
    summary = _summarise(rows, results) if rows else None
    if summary is not None:
        return summary, [], [], games
    return None, [_light(r) for r in rows], results, games


def _check_chunk_games(
    rows: list[Row], learned: tuple[bytes | None, dict[str, bytes]] | None, reexecute: bool
) -> tuple[list[Checked], ChunkGames | None]:
    """Worker side of ``verify``: the chunk's row checks and its game rows."""
    global _REEXEC
    _REEXEC = reexecute
    results = _check_chunk(rows, learned)
    return results, chunk_games(rows, results, _PAYLOADS) if reexecute else None


def _light(r: Row) -> Row:
    newest = _WANTED.get(r.originator_id)
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
    bounds = list(chunk_bounds(db, CHUNK))

    def feed(
        lo: int,
        hi: int,
        summary: Summary | None,
        rows: list[Row],
        results: Any,
        games: ChunkGames | None,
    ) -> None:
        if games is not None and checker.reexec is not None:
            checker.reexec.feed(games)
        if summary is not None:
            count = checker.feed_summary(*summary)
            if count is not None:
                if progress:
                    progress(count)
                return
            # The boundary facts do not hold: every row, here, for the exact findings.
            rows, results = _check_here(db, lo, hi, raw, log_id, wanted)
        checker.feed(rows, results)
        if progress:
            progress(len(rows))

    if jobs <= 1:
        global _LEARNED
        _init(raw, log_id, wanted, reexecute)
        _LEARNED = None  # so ``verify`` sets its own keys again
        try:
            for lo, hi in bounds:
                feed(lo, hi, *_summary_job((db, lo, hi)))
        finally:
            close_connection(db)
        return _finish(checker, snapshot_check)
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    if reexecute:
        preload()
    with ctx.Pool(jobs, initializer=_init, initargs=(raw, log_id, wanted, reexecute)) as pool:
        jobs_args = ((db, a, b) for a, b in bounds)
        outcomes = pool.imap(_summary_job, jobs_args, chunksize=1)
        for (lo, hi), outcome in zip(bounds, outcomes, strict=True):
            feed(lo, hi, *outcome)
    return _finish(checker, snapshot_check)


def _check_here(
    db: str, lo: int, hi: int, raw: dict[str, bytes], log_id: bytes | None, wanted: dict[str, int]
) -> tuple[list[Row], list[Checked]]:
    """A chunk checked row by row in the parent (a connection of its own, closed after)."""
    global _LEARNED
    _init(raw, log_id, wanted, _REEXEC)
    _LEARNED = None  # so ``verify`` sets its own keys again
    rows = read_range(db, lo, hi, cached=False)
    return [_light(r) for r in rows], _check_chunk(rows)


def _snapshot_check(snapshots: list[Row] | None, checker: Checker) -> SnapshotCheck | None:
    if not snapshots:
        return None
    check = SnapshotCheck(snapshots, checker)
    checker.observer = check.observe
    return check


def _finish(checker: Checker, snapshot_check: SnapshotCheck | None) -> Report:
    if snapshot_check is not None:
        snapshot_check.finish()
        checker.report.snapshots = snapshot_check.checked
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
    learned: tuple[bytes | None, dict[str, bytes]] | None = None,
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

    def learn(chunk: list[Row]) -> tuple[bytes | None, dict[str, bytes]]:
        # Keys named by trust rows in this chunk sign the rows after them.
        nonlocal log_id
        if any(r.topic in TRUST_TOPICS for r in chunk if type(r.topic) is str):
            new_id, named = trust_candidates(chunk)
            log_id = log_id or new_id
            known.update(named)
        return log_id, dict(known)

    def feed(chunk: list[Row], outcome: tuple[list[Checked], ChunkGames | None]) -> None:
        results, games = outcome
        if games is not None and checker.reexec is not None:
            checker.reexec.feed(games)
        checker.feed(chunk, results)
        if progress:
            progress(len(chunk))

    if jobs <= 1:
        for chunk in _chunks(rows, CHUNK):
            feed(chunk, _check_chunk_games(chunk, learn(chunk), reexecute))
    else:
        ctx = multiprocessing.get_context("spawn" if os.name != "posix" else "fork")
        if reexecute:
            preload()
        with ctx.Pool(jobs) as pool:
            pending: list[Any] = []
            for chunk in _chunks(rows, CHUNK):
                args = (chunk, learn(chunk), reexecute)
                pending.append((chunk, pool.apply_async(_check_chunk_games, args)))
                if len(pending) >= jobs * 3:
                    c, res = pending.pop(0)
                    feed(c, res.get())
            for c, res in pending:
                feed(c, res.get())
    return _finish(checker, snapshot_check)
