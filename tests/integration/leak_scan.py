"""A scanner for hidden information: undealt cards and a shoe's seed, in every encoding
the code uses, searched in the raw database and in every read the application offers.

Encodings: a card as its wire text (``"Th"``, searched with its JSON quotes so a shown
``"Th"`` elsewhere in a longer string cannot match by accident), its glyph (``T♥``, as
``audit-cli`` prints it; raw UTF-8 and JSON's ``\\u2665`` escape) and its documented
integer id (``(rank - 2) * 4 + suit``: any integer under a key naming a card, in every
JSON document); a seed as raw bytes, hex (lower and upper case) and base64 (standard and
URL-safe, with and without padding).

Where: every file of a SQLite store's data directory (the database, its WAL and shared
memory files, the keys) as bytes; on PostgreSQL every row of every table of the store's
schema, each value as bytes (``bytea``) or text; and in both, every event payload parsed
as JSON for the card ids. Reads are passed in as documents (dicts, lists, text).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

from audit_cli.rows import read_rows
from games.cards import Card
from ledger import envelope
from tests.conftest import Store

Needles = dict[str, bytes]


def card_needles(cards: Iterable[Card]) -> Needles:
    out: Needles = {}
    for c in cards:
        glyph = c.glyph
        out[f"card {c} as text"] = f'"{c}"'.encode()
        out[f"card {c} as glyph"] = glyph.encode()
        out[f"card {c} as escaped glyph"] = json.dumps(glyph).strip('"').encode()
    return out


def seed_needles(seed: bytes) -> Needles:
    return {
        "seed raw": seed,
        "seed hex": seed.hex().encode(),
        "seed HEX": seed.hex().upper().encode(),
        "seed base64": base64.b64encode(seed),
        "seed base64 unpadded": base64.b64encode(seed).rstrip(b"="),
        "seed base64url": base64.urlsafe_b64encode(seed),
        "seed base64url unpadded": base64.urlsafe_b64encode(seed).rstrip(b"="),
    }


def scan_bytes(where: str, blob: bytes, needles: Needles) -> list[str]:
    return [f"{label} in {where}" for label, needle in needles.items() if needle in blob]


def card_ids_in(where: str, doc: Any, ids: dict[int, Card], key: str = "") -> list[str]:
    """Integers under a key that names a card (``card``, ``cards``, ``hole``...) that are
    the id of a hidden card."""
    found: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += card_ids_in(where, v, ids, str(k))
    elif isinstance(doc, list | tuple):
        for v in doc:
            found += card_ids_in(where, v, ids, key)
    elif type(doc) is int and doc in ids and _names_a_card(key):
        found.append(f"card {ids[doc]} as id {doc} under {key!r} in {where}")
    return found


def _names_a_card(key: str) -> bool:
    key = key.lower()
    return any(w in key for w in ("card", "hole", "up", "draw", "shoe", "deck"))


def database_blobs(store: Store) -> Iterator[tuple[str, bytes]]:
    """Every byte the store holds: SQLite's files, or every PostgreSQL row of its schema."""
    if store.database_url is None:
        for path in sorted(store.data_dir.rglob("*")):
            if path.is_file():
                yield f"file {path.name}", path.read_bytes()
        return
    import psycopg
    from psycopg import sql

    from tests.conftest import PG_URL

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (store.schema,),
            ).fetchall()
        ]
        assert tables, f"no tables in schema {store.schema}"
        for table in tables:
            query = sql.SQL("SELECT * FROM {}.{}").format(
                sql.Identifier(str(store.schema)), sql.Identifier(table)
            )
            for i, row in enumerate(conn.execute(query).fetchall()):
                parts = [
                    bytes(v) if isinstance(v, bytes | memoryview) else str(v).encode() for v in row
                ]
                yield f"row {i} of {table}", b"\x00".join(parts)


def payloads(store: Store) -> Iterator[tuple[str, Any]]:
    for r in read_rows(store.db, skip_malformed=True):
        try:
            yield f"event {r.topic} v{r.version}", json.loads(envelope.decode(r.state).payload)
        except (envelope.EnvelopeError, ValueError):
            continue


def scan(
    store: Store, reads: Iterable[tuple[str, Any]], hidden: Iterable[Card], seed: bytes
) -> list[str]:
    """Every place a hidden card or the seed shows up: the database and the reads."""
    hidden = list(hidden)
    needles = {**card_needles(hidden), **seed_needles(seed)}
    ids = {c.id: c for c in hidden}
    found: list[str] = []
    for where, blob in database_blobs(store):
        found += scan_bytes(where, blob, needles)
    for where, doc in payloads(store):
        found += card_ids_in(where, doc, ids)
    for where, doc in reads:
        if isinstance(doc, str):
            texts = [doc]
        else:
            texts = [json.dumps(doc, default=str), json.dumps(doc, default=str, ensure_ascii=False)]
            found += card_ids_in(where, doc, ids)
        for text in texts:
            found += scan_bytes(f"read {where}", text.encode(), needles)
        for blob in _bytes_in(doc):
            found += scan_bytes(f"read {where}", blob, needles)
    return sorted(set(found))


def _bytes_in(doc: Any) -> Iterator[bytes]:
    """Bytes values inside a read (JSON would only show their repr)."""
    if isinstance(doc, bytes | bytearray | memoryview):
        yield bytes(doc)
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from _bytes_in(v)
    elif isinstance(doc, list | tuple | set):
        for v in doc:
            yield from _bytes_in(v)
