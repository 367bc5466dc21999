"""A whole shoe played to the cut card with many seats, on SQLite and PostgreSQL: `audit-cli
round` (the command) passes on every round of it, for the round and for players' seats;
`verify` passes with the books of every seat; one card altered in one stored event is
caught, by its signature and, without keys, by the re-derivation from the revealed seed."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from typing import Any

from audit_cli.main import main as audit_cli
from audit_cli.rows import read_rows
from audit_cli.table_round import check_table_round
from audit_cli.verify import verify
from ledger import contracts
from ledger.tables.aggregates import TableRound, table_round_id_for
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live
from tests.integration.test_table_shoe import tables_offered

SEATS = 24
POLICIES = [["double", "hit"], ["stand"], ["split", "hit"], [], ["cash-out"], ["hit", "stand"]]
SIDES = [{}, {"perfect-pairs": 100}, {"21+3": 100}, {"hot-3": 100}, {"bust-it": 100}]


def play_round(live: Live, sessions: list[str], number: int) -> TableRound:
    for i, s in enumerate(sessions):
        live.bet(s, "main", 100 * (1 + i % 5))
        for bet, amount in SIDES[i % len(SIDES)].items():
            live.bet(s, bet, amount)
    live.tick(10_000)
    while True:
        rnd = live.app.find(TableRound, table_round_id_for("T1", number))
        assert rnd is not None
        if rnd.phase not in ("insurance", "step"):
            return rnd
        step = rnd.step if rnd.phase == "step" else 0
        for i, s in enumerate(sessions):
            offered = [o[0] for o in tables_offered(live, s)]
            wanted = POLICIES[i % len(POLICIES)] if step else [("insure", "no-insurance")[i % 2]]
            for choice in wanted:
                if choice in offered:
                    live.decide(s, step, choice)
                    break
        live.tick(5_000)


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = audit_cli(list(argv))
    return code, json.loads(out.getvalue())


def alter_one_card(store: Store) -> None:
    """The insider changes the first player card of the first deal, in place."""
    conn = store.connect()
    try:
        marker = "?" if store.database_url is None else "%s"
        rows = conn.execute(
            f"SELECT originator_id, originator_version, state FROM {store.table} "
            f"WHERE topic = {marker}",
            (contracts.TABLE_ROUND_DEALT,),
        ).fetchall()
        oid, version, state = rows[0]
        state = bytes(state)
        forged = re.sub(
            rb'("player_cards": ?\[")([2-9TJQKA])',
            lambda m: m.group(1) + (b"3" if m.group(2) != b"3" else b"4"),
            state,
            count=1,
        )
        assert forged != state
        if store.database_url is None:
            conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
        else:
            conn.execute(f"ALTER TABLE {store.table} DISABLE TRIGGER USER")
        conn.execute(
            f"UPDATE {store.table} SET state = {marker} "
            f"WHERE originator_id = {marker} AND originator_version = {marker}",
            (forged, oid, version),
        )
    finally:
        conn.close()


def test_a_whole_shoe_with_many_seats_audits_round_by_round_and_a_changed_card_is_caught(
    store: Store,
) -> None:
    live = Live(
        store, config={**CONFIG, "decks": 1, "penetration_permille": [450, 530], "settle_batch": 5}
    )
    sessions = [live.player(f"p{i:02d}", 100_000) for i in range(SEATS)]
    live.tick()
    rounds: list[TableRound] = []
    while not rounds or rounds[-1].next_start is not None:
        rounds.append(play_round(live, sessions, len(rounds) + 1))
        assert rounds[-1].phase == "settled" and len(rounds) < 30
    assert len(rounds) >= 3 and all(len(r.seats) == SEATS for r in rounds)
    keys = store.keyring.public_keys
    for rnd in rounds:
        # the command itself (keys: the store's keyring is not beside a PostgreSQL URL)
        report = check_table_round(store.db, rnd.code, keys)
        assert report.ok and report.rederived and report.signatures_checked, report.problems
        code, doc = cli("round", rnd.code, "--db", store.db, "--json")
        assert code == 0 and doc["ok"] and doc["rederived"], doc["problems"]
        for s in sessions[:: SEATS // 4]:
            code, doc = cli("round", rnd.code, "--db", store.db, "--session", s, "--json")
            assert code == 0 and doc["seat"]["hands"], doc["problems"]
    report = verify(read_rows(store.db), keys, jobs=1)
    assert report.ok, report.findings
    assert sum(1 for r in read_rows(store.db) if r.topic == contracts.SEAT_SETTLED) == (
        SEATS * len(rounds)
    )

    alter_one_card(store)
    first = rounds[0].code
    signed = check_table_round(store.db, first, keys)
    assert any(f.field == "signature" for f in signed.findings), signed.findings
    unsigned = check_table_round(store.db, first, None)  # no keys: the seed still tells
    assert any(f.step == "dealt" for f in unsigned.findings), unsigned.findings
    code, doc = cli("round", first, "--db", store.db, "--json")
    assert code == 1 and not doc["ok"]
    for rnd in rounds[1:]:
        assert check_table_round(store.db, rnd.code, keys).ok  # only that round is touched
    assert not verify(read_rows(store.db), keys, jobs=1).ok
