"""Reading the database mid-round reveals no undealt card (DESIGN §1.4), SQLite and PostgreSQL.

While a Red Dog round waits for the player's decision, every row of every table (all
columns, raw bytes; on SQLite also the database files themselves) is searched for the
round's seed, and every stored payload for the third card, which the test alone knows by
unsealing the seed with the keyring. Once the round ends, the seed is in the log and its
SHA-256 equals the commitment recorded when the round started.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from audit_cli.rows import read_rows
from games.red_dog.engine import shuffled_deck
from ledger import envelope
from ledger.casino import Casino
from ledger.results import RoundPlayed
from ledger.rounds import Round, round_id_for, unseal_seed
from tests.conftest import Store

BET = 200


def open_session(app: Casino) -> str:
    app.open_account("open", "ann", "EUR")
    app.deposit("deposit", "ann", 100_000)
    return str(app.open_session("buy-in", "ann", 20_000).session_id)


def bet_until_a_round_waits(app: Casino, sid: str) -> RoundPlayed:
    """Bet until the two cards show a spread (pairs and consecutive cards settle at once)."""
    for i in range(100):
        result = app.red_dog_bet(f"bet-{i}", sid, BET)
        if result.status == "open":
            assert result.view["phase"] == "decide"
            return result
    raise AssertionError("100 deals in a row settled at once")


def seed_of(store: Store, rnd: Round) -> bytes:
    """What only the house knows mid-round: the seed, unsealed with the sealing key."""
    return unseal_seed(store.keyring.sealing_keys[rnd.sealing_kid], rnd.id, rnd.sealed_seed)


def every_stored_value(store: Store) -> Iterator[tuple[str, bytes]]:
    """(where, raw bytes) of every column of every row of every table, and on SQLite of
    every file of the database (journal and WAL included)."""
    conn = store.connect()
    try:
        if store.kind == "sqlite":
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            quoted = [f'"{t}"' for t in tables]
        else:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (store.schema,),
                ).fetchall()
            ]
            quoted = [f'"{store.schema}"."{t}"' for t in tables]
        assert tables, "no tables found"
        for name, q in zip(tables, quoted, strict=True):
            for i, row in enumerate(conn.execute(f"SELECT * FROM {q}").fetchall()):
                for j, value in enumerate(row):
                    yield f"{name} row {i} column {j}", as_bytes(value)
    finally:
        conn.close()
    if store.kind == "sqlite":
        for path in store.data_dir.glob("casino.sqlite*"):
            yield f"file {path.name}", path.read_bytes()


def as_bytes(value: object) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return str(value).encode()


def payload_documents(store: Store) -> list[tuple[str, dict[str, Any]]]:
    return [(r.topic, json.loads(envelope.decode(r.state).payload)) for r in read_rows(store.db)]


def string_leaves(doc: object) -> Iterator[str]:
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from string_leaves(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from string_leaves(v)


def answers_an_earlier_bet(doc: dict[str, Any], shown: RoundPlayed) -> bool:
    """A bet's request record whose response names another round (one that settled at once)."""
    request_id = doc.get("request_id")
    return (
        isinstance(request_id, str)
        and request_id.startswith("bet-")
        and shown.code not in set(string_leaves(doc))
    )


def test_mid_round_the_database_holds_neither_the_seed_nor_the_third_card(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)
    shown = bet_until_a_round_waits(app, sid)
    rnd = app.find_round(shown.code)
    seed = seed_of(store, rnd)
    deck = shuffled_deck(seed)
    assert shown.view["cards"] == [str(c) for c in deck[:2]]
    third = str(deck[2])
    app.seal()  # a checkpoint mid-round must not leak either

    forms = {
        "raw seed": seed,
        "hex seed": seed.hex().encode(),
        "HEX seed": seed.hex().upper().encode(),
        "base64 seed": base64.b64encode(seed),
    }
    searched = 0
    for where, value in every_stored_value(store):
        searched += 1
        for form, needle in forms.items():
            assert needle not in value, f"the {form} is readable in {where}"
    assert searched > 20

    rid = str(round_id_for(shown.code))
    # Earlier rounds of the session settled at once and show their own cards, which may
    # include this card by chance (each round has its own deck): they are not searched.
    # Their bets' request records keep each bet's response, those rounds' cards included.
    settled_before = {
        r.originator_id
        for r in read_rows(store.db)
        if r.topic.startswith("croupier/round/") and r.originator_id != rid
    }
    docs = [
        (r.topic, json.loads(envelope.decode(r.state).payload))
        for r in read_rows(store.db)
        if r.originator_id not in settled_before
    ]
    docs = [(topic, doc) for topic, doc in docs if not answers_an_earlier_bet(doc, shown)]
    assert any(topic == "croupier/round/started@1" for topic, _ in docs)
    for topic, doc in docs:  # this round's events, and every event of no other round
        assert third not in set(string_leaves(doc)), f"the third card {third} is in {topic}"


def test_after_the_round_settles_the_seed_is_revealed_and_matches_the_commitment(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)
    shown = bet_until_a_round_waits(app, sid)
    seed = seed_of(store, app.find_round(shown.code))

    settled = app.red_dog_see("see", sid)

    rid = str(round_id_for(shown.code))
    docs = [
        (r.topic, json.loads(envelope.decode(r.state).payload))
        for r in read_rows(store.db)
        if r.originator_id == rid
    ]
    (first_topic, started), (last_topic, last) = docs[0], docs[-1]
    assert (first_topic, last_topic) == ("croupier/round/started@1", "croupier/round/settled@1")
    assert last["seed"] == settled.seed == seed.hex()
    assert hashlib.sha256(bytes.fromhex(last["seed"])).hexdigest() == started["commitment"]
    assert settled.view["cards"] == [str(c) for c in shuffled_deck(seed)[:3]]
    assert str(shuffled_deck(seed)[2]) in set(string_leaves(last))  # now it may show
    assert any(seed.hex().encode() in value for _, value in every_stored_value(store))


def test_a_voided_open_round_reveals_its_seed_matching_the_commitment(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)
    shown = bet_until_a_round_waits(app, sid)
    seed = seed_of(store, app.find_round(shown.code))

    voided = app.void_round("void", shown.code, "table malfunction", "INC-9")

    assert voided.seed == seed.hex()
    assert hashlib.sha256(seed).hexdigest() == shown.commitment
