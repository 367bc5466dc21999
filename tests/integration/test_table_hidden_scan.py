"""Hidden information at a live table: mid-round (after the deal, and after a step's card),
no undealt card and no shoe seed in any byte of the database or in any read the
application offers (tests/integration/leak_scan.py says how it looks). A planted leak
in each place is found: the scan can fail."""

from __future__ import annotations

import io
import secrets
import uuid
from contextlib import redirect_stdout
from typing import Any

import pytest

from audit_cli.main import main as audit_cli
from games.blackjack import Rules, Shoe, shoe_from_seed
from games.cards import Card
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableSeat,
    seat_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.players import Players
from ledger.tables.views import decision_statistics, player_rounds, round_history, seat_history
from ledger.unit_of_work import UnitOfWork
from tests.conftest import Store
from tests.helpers import ChosenSeeds
from tests.integration.leak_scan import card_needles, scan, seed_needles
from tests.integration.table_helpers import Live

# Shown first: 5c and 4h to every player, 6d up. Everything after is hidden until shown,
# and no hidden card has the text of a shown one (nor an id that is a small number).
SHOE = Shoe.of("5c 6d 4h Ts Kh Qs Js As 9h 8s Jd Qd Kd Ad 9d 8d Tc Jc Qc Kc")
SEED = secrets.token_bytes(32)


class SecretLive(Live):
    """A live table whose first shoe is SHOE, behind a random seed (so the seed's bytes
    cannot turn up anywhere by chance)."""

    def open(self) -> Casino:
        def shoe_maker(rules: Rules, seed: bytes) -> Shoe:
            return SHOE if seed == SEED else shoe_from_seed(rules, seed)

        app = bootstrap(
            self.store.settings(),
            keyring=self.store.keyring,
            clock=self.clock,
            seed_source=ChosenSeeds(SEED),
            shoe_maker=shoe_maker,
        )
        self.store.apps.append(app)
        return app


def tables(app: Casino) -> Players:
    handler: Any = app.handlers[tc.PlaceBet]
    found = handler.__self__
    assert isinstance(found, Players)
    return found


def every_read(live: Live, sessions: dict[str, str], answers: list[Any]) -> list[tuple[str, Any]]:
    """Every read the application offers about the table, its rounds and its players."""
    app = live.app
    table = app.find(Table, table_id_for("T1"))
    assert table is not None
    rnd = app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None
    reads: list[tuple[str, Any]] = [
        ("table aggregate", vars(table)),
        ("round aggregate", vars(rnd)),
        ("round history", round_history(app, "T1", rnd.code)),
        ("statistics, live step", decision_statistics(app, "T1", 1, rnd.step or 1)),
        ("statistics, history", decision_statistics(app, "T1")),
        ("command answers", answers),
    ]
    uow = UnitOfWork(app.find, {})
    for name, session in sessions.items():
        seat = app.find(TableSeat, seat_id_for(rnd.id, session))
        assert seat is not None
        reads += [
            (f"seat aggregate {name}", vars(seat)),
            (f"seat history {name}", seat_history(app, "T1", rnd.code, session)),
            (f"options offered {name}", tables(app).offered(uow, "T1", session)),
            (f"account history {name}", app.history.account_history(name)),
            (f"last games {name}", app.history.last_games(session)),
            (f"table rounds {name}", player_rounds(app, name)),
            (f"session balance {name}", app.session_balance(session)),
        ]
    for argv in (
        ["round", rnd.code, "--json"],
        ["round", rnd.code, "--session", sessions["ann"], "--json"],
        ["round", rnd.code, "--wide"],
        ["history", "ann", "--json"],
        ["rtp", "--json"],
    ):
        out = io.StringIO()
        with redirect_stdout(out):
            audit_cli([*argv, "--db", live.store.db])
        reads.append((f"audit-cli {' '.join(argv[:1])}", out.getvalue()))
    return reads


def mid_round(store: Store) -> tuple[Live, dict[str, str], list[Any]]:
    live = SecretLive(store)
    sessions = {name: live.player(name) for name in ("ann", "bob", "cat")}
    live.tick()
    answers: list[Any] = []
    for session in sessions.values():
        answers.append(live.bet(session, "main", 1_000))
    answers.append(live.bet(sessions["ann"], "perfect-pairs", 100))
    answers.append(live.app.command("all", tc.AllSideBets(sessions["bob"], "T1")))
    live.tick(10_000)  # the deal: 5c 4h to the players, 6d up; the hole card stays hidden
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "step" and rnd.up == "6d"
    answers.append(live.decide(sessions["ann"], 1, "hit"))
    answers.append(live.decide(sessions["bob"], 1, "double"))
    return live, sessions, answers


def hidden_after(shown: int) -> list[Card]:
    """The shoe's cards from position ``shown`` on (the first three are the deal's)."""
    return list(SHOE.cards[shown:])


def test_after_the_deal_and_after_a_step_no_hidden_card_or_seed_anywhere(store: Store) -> None:
    live, sessions, answers = mid_round(store)
    reads = every_read(live, sessions, answers)
    assert scan(store, reads, hidden_after(3), SEED) == []
    live.tick(5_000)  # step 1 closes: its card (Kh, position 4) is shown; Ts stays hidden
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "step" and rnd.step_cards == ["Kh"]
    answers.append(live.decide(sessions["ann"], 2, "stand"))
    reads = every_read(live, sessions, answers)
    hidden = [SHOE[3], *hidden_after(5)]
    assert scan(store, reads, hidden, SEED) == []
    # the scan does look: the shown step card is found where it is shown
    assert any("card Kh as text" in f for f in scan(store, reads, [SHOE[4]], SEED))


def test_a_planted_card_or_seed_in_a_read_is_found(store: Store) -> None:
    live, sessions, answers = mid_round(store)
    reads = every_read(live, sessions, answers)
    hole = SHOE[3]
    for planted, expect in (
        ({"hole": str(hole)}, "card Ts as text"),
        ({"glyphs": hole.glyph}, "card Ts as glyph"),
        ({"cards": [hole.id]}, f"card Ts as id {hole.id}"),
        ("the next card is " + hole.glyph, "card Ts as glyph"),
        ({"seed": SEED}, "seed raw"),
        *(
            ({"seed": n.decode("ascii")}, label)
            for label, n in seed_needles(SEED).items()
            if label != "seed raw"
        ),
    ):
        found = scan(store, [*reads, ("planted", planted)], hidden_after(3), SEED)
        assert any(f.startswith(expect) and "planted" in f for f in found), (planted, found)


@pytest.mark.parametrize("leak", ["card text", "card glyph", "seed hex", "seed base64", "seed raw"])
def test_a_planted_card_or_seed_in_a_database_row_is_found(store: Store, leak: str) -> None:
    mid_round(store)
    assert scan(store, [], hidden_after(3), SEED) == []
    needles = {**card_needles([SHOE[3]]), **seed_needles(SEED)}
    value = {
        "card text": needles["card Ts as text"],
        "card glyph": needles["card Ts as glyph"],
        "seed hex": needles["seed hex"],
        "seed base64": needles["seed base64"],
        "seed raw": SEED,
    }[leak]
    conn = store.connect()  # the insider writes a row of their own
    try:
        marker = "?" if store.database_url is None else "%s"
        oid: Any = uuid.uuid4().hex if store.database_url is None else uuid.uuid4()
        conn.execute(
            f"INSERT INTO {store.table} (originator_id, originator_version, topic, state) "
            f"VALUES ({marker}, 1, 'planted', {marker})",
            (oid, b"{" + value + b"}"),
        )
    finally:
        conn.close()
    found = scan(store, [], hidden_after(3), SEED)
    label = {"card text": "card Ts as text", "card glyph": "card Ts as glyph"}.get(leak, leak)
    assert any(f.startswith(label) for f in found), found
