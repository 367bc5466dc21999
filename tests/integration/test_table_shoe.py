"""A whole shoe to the cut card: sealed seed, hidden cards mid-round, revealed seed, replay."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from uuid import UUID

from audit_cli.rows import read_rows
from audit_cli.verify import verify
from games.blackjack import play_round, shoe_from_seed
from ledger import contracts, envelope
from ledger.rounds import unseal_seed
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, TableShoe, shoe_id_for, table_round_id_for
from ledger.tables.config import rules_of
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live, a_seed_that_stops_at_a_step, plans_of

# one deck, cut early enough that a whole round always fits after the cut card (the
# table refuses a shoe that could run out mid-round: ROUND_CARDS_MAX)
ONE_DECK = {**CONFIG, "decks": 1, "penetration_permille": [450, 530]}
POLICY = {"ann": ["double", "hit"], "bob": ["stand"], "cat": ["split", "hit"], "dan": []}


def play_a_round(live: Live, sessions: dict[str, str], number: int) -> TableRound:
    for name, s in sessions.items():
        live.bet(s, "main", 100 * (1 + len(name)))
        if name == "cat":
            live.bet(s, "hot-3", 100)
    live.tick(10_000)
    while True:
        rnd = live.app.find(TableRound, table_round_id_for("T1", number))
        assert rnd is not None
        if rnd.phase not in ("insurance", "step"):
            return rnd
        step = rnd.step if rnd.phase == "step" else 0
        for name, s in sessions.items():
            offered = [o[0] for o in tables_offered(live, s)]
            for wanted in POLICY[name] if step else ["no-insurance"]:
                if wanted in offered:
                    live.decide(s, step, wanted)
                    break
        live.tick(5_000)


def tables_offered(live: Live, session: str) -> list[list[Any]]:
    from ledger.unit_of_work import UnitOfWork

    tables: Any = live.app.handlers[tc.PlaceBet]
    return list(tables.__self__.offered(UnitOfWork(live.app.find, {}), "T1", session))


def string_leaves(doc: object) -> set[str]:
    if isinstance(doc, str):
        return {doc}
    if isinstance(doc, dict):
        return set().union(*(string_leaves(v) | {k} for k, v in doc.items())) if doc else set()
    if isinstance(doc, list):
        return set().union(*(string_leaves(v) for v in doc)) if doc else set()
    return set()


def test_mid_round_no_row_holds_the_seed_or_an_undealt_card(store: Store) -> None:
    live = Live(store, config=ONE_DECK, seeds=(a_seed_that_stops_at_a_step(ONE_DECK),))
    ann = live.player("ann")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.tick(10_000)
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "step"
    record = live.app.find(TableShoe, shoe_id_for("T1", 1))
    assert record is not None and record.seed is None
    seed = unseal_seed(
        store.keyring.sealing_keys[record.sealing_kid], record.id, record.sealed_seed
    )
    shoe = shoe_from_seed(rules_of(rnd.config), seed)
    shown = {str(c) for c in shoe[:3]}
    undealt = {str(c) for c in shoe[3:12]} - shown  # the hole card and what follows
    docs = [json.loads(envelope.decode(r.state).payload) for r in read_rows(store.db)]
    for doc in docs:
        leaves = string_leaves(doc)
        assert seed.hex() not in leaves and not (undealt & leaves), doc
    raw = b"".join(bytes(r.state) for r in read_rows(store.db))
    assert seed not in raw and seed.hex().encode() not in raw
    assert rnd.hole is None and not (undealt & set(rnd.step_cards))


def test_a_shoe_played_to_the_cut_card_reveals_its_seed_and_every_round_replays(
    store: Store,
) -> None:
    live = Live(store, config=ONE_DECK)
    sessions = {name: live.player(name, 50_000) for name in POLICY}
    live.tick()
    number = 1
    while True:
        rnd = play_a_round(live, sessions, number)
        assert rnd.phase == "settled", rnd.phase
        if rnd.next_start is None:
            break
        number += 1
        assert number < 30
    record = live.app.find(TableShoe, shoe_id_for("T1", 1))
    assert record is not None and record.seed is not None
    seed = bytes.fromhex(record.seed)
    assert hashlib.sha256(seed).hexdigest() == record.commitment
    rules = rules_of(rnd.config)
    shoe = shoe_from_seed(rules, seed)
    assert number >= 3
    for n in range(1, number + 1):
        played = live.app.find(TableRound, table_round_id_for("T1", n))
        assert played is not None
        replay = play_round(rules, shoe, played.start, plans_of(live.app, played))
        assert played.player_cards == [str(c) for c in replay.shared.player_cards]
        assert played.step_cards == [str(s.card) for s in replay.steps if s.card is not None]
        dealer = [played.up, played.hole, *played.dealer_draws]
        assert dealer == [str(c) for c in replay.shared.dealer_cards]
        returned = {s.seat_id: s.returned for s in replay.settlements}
        from ledger.tables.aggregates import TableSeat

        for sid in played.seats:
            seat = live.app.find(TableSeat, UUID(sid))
            assert seat is not None and seat.result["returned"] == returned[sid]
    nxt = live.app.find(TableRound, table_round_id_for("T1", number + 1))
    assert nxt is not None and nxt.shoe_number == 2 and nxt.start == 0  # the next shoe at once
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings


def test_audit_cli_round_rederives_every_round_of_a_revealed_shoe_and_catches_a_changed_card(
    sqlite_store: Store,
) -> None:
    import re

    from audit_cli.main import main as audit_cli
    from audit_cli.table_round import check_table_round

    store = sqlite_store
    live = Live(store, config=ONE_DECK)
    sessions = {name: live.player(name, 50_000) for name in POLICY}
    live.tick()
    codes = []
    number = 1
    while True:
        rnd = play_a_round(live, sessions, number)
        codes.append(rnd.code)
        if number == 1:  # mid-shoe: the cards are shown, the seed is not yet revealed
            live_report = check_table_round(store.db, rnd.code, store.keyring.public_keys)
            assert live_report.ok and not live_report.rederived
            assert "shoe live" in live_report.status
        if rnd.next_start is None:
            break
        number += 1
    for code in codes:
        report = check_table_round(store.db, code, store.keyring.public_keys)
        assert report.ok, report.problems
        assert report.rederived and report.signatures_checked
    assert audit_cli(["round", codes[0], "--db", store.db, "--json"]) == 0
    # alter one card in one stored event: the signature no longer covers it
    conn = store.connect()
    try:
        rows = conn.execute(
            "SELECT rowid, state FROM stored_events WHERE topic = ?",
            (contracts.TABLE_ROUND_STEP_CLOSED,),
        ).fetchall()
        target = next(
            (rid, bytes(st))
            for rid, st in rows
            if re.search(rb'"card": ?"[2-9TJQKA][cdhs]"', bytes(st))
        )
        rid, state = target
        forged = re.sub(
            rb'("card": ?")([2-9TJQKA])',
            lambda m: m.group(1) + (b"3" if m.group(2) != b"3" else b"4"),
            state,
            count=1,
        )
        assert forged != state
        conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")  # the attacker's power
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (forged, rid))
    finally:
        conn.close()
    findings = [
        f
        for code in codes
        for f in check_table_round(store.db, code, store.keyring.public_keys).findings
    ]
    assert any(f.field == "signature" for f in findings), findings


def test_the_rebuilt_shoes_kept_are_bounded_and_a_dropped_one_is_rebuilt_alike(
    store: Store, monkeypatch: Any
) -> None:
    """A long-running server deals shoe after shoe: the handlers keep at most
    ``KEPT_SHOES`` rebuilt shoes (here 1), and a round of the next shoe plays on a shoe
    rebuilt from its sealed seed."""
    from ledger.tables import context

    monkeypatch.setattr(context, "KEPT_SHOES", 1)
    live = Live(store, config=ONE_DECK)
    sessions = {name: live.player(name, 50_000) for name in POLICY}
    live.tick()
    number = 1
    while play_a_round(live, sessions, number).next_start is not None:
        number += 1
        assert number < 30
    last = play_a_round(live, sessions, number + 1)  # the first round of shoe 2
    assert last.phase == "settled" and last.shoe_number == 2
    holders = {
        id(h.__self__): h.__self__ for h in live.app.handlers.values() if hasattr(h, "__self__")
    }
    caches = {
        id(h.cache): h.cache for h in holders.values() if isinstance(h, context.TableHandlers)
    }
    assert len(caches) == 1  # the player's, runner's and operator's handlers share one
    assert max(len(c.shoes) for c in caches.values()) <= 1
    record = live.app.find(TableShoe, shoe_id_for("T1", 1))
    assert record is not None and record.seed is not None  # shoe 1 revealed, then dropped
