"""Red Dog rounds through the real Casino (DESIGN §1.4-1.5, §5.2), on SQLite and PostgreSQL.

A session of rounds, game codes and lookup by code, the player's history and the
"last 10 games" recall, a round's timeline, repeat, busy sessions, automatic completion on
close, and voiding. Where a test needs a particular deal it opens the Casino with chosen
cards (``with_cards``, a card source: those rounds record that their cards were chosen) or,
where the test also checks the round as certified, with a fake seed source
(:class:`ChosenSeeds`) in place of the OS CSPRNG; the cards come from the real engine.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from audit_cli.rounds import check_round, player_history
from audit_cli.rows import read_rows
from audit_cli.verify import Report, trust_candidates, verify
from games.cards import Card, parse_cards
from games.red_dog.engine import DECK_LABEL as DECK
from games.red_dog.engine import PAYS, Outcome, outcome_for, shuffled_deck, spread_of
from ledger import envelope
from ledger.casino import Casino
from ledger.errors import RoundNotFound, SessionBusy
from ledger.results import RoundPlayed
from ledger.rounds import round_id_for
from tests.conftest import Seeded, Store, WithCards
from tests.helpers import open_session as open_funded_session
from tests.helpers import raw_rows

DEPOSIT = 100_000
BUY_IN = 20_000
BET = 200
ROUND = "croupier/round/"
STARTED, ACTED = ROUND + "started@1", ROUND + "acted@1"
SETTLED, VOIDED = ROUND + "settled@1", ROUND + "voided@1"
REFUNDED = "croupier/session/refunded@1"
WIN_REVERSED = "croupier/session/win-reversed@1"
CODE = re.compile(r"^RD-(\d{8}-\d{6})-[0-9A-HJKMNP-TV-Z]{4}$")
HISTORY_COLUMNS = ("date", "game", "code", "stakes", "wins", "outcome")


# -- seeds ------------------------------------------------------------------------------


def seed_where(wanted: Callable[[list[Card]], bool]) -> bytes:
    """The first of a fixed series of random-looking seeds whose deck satisfies ``wanted``."""
    for i in range(10_000):
        seed = hashlib.sha256(f"red-dog-rounds/{i}".encode()).digest()
        if wanted(shuffled_deck(seed)):
            return seed
    raise AssertionError("no seed in the series deals what the test needs")


def spread(deck: list[Card]) -> int | None:
    return spread_of(deck[0].rank, deck[1].rank)


def deals_a_winner(deck: list[Card]) -> bool:
    """Two cards with a spread (the player decides), and the third falls between them."""
    return spread(deck) not in (0, None) and outcome_for(*(c.rank for c in deck[:3])) is Outcome.WIN


def deals_a_loser(deck: list[Card]) -> bool:
    return (
        spread(deck) not in (0, None) and outcome_for(*(c.rank for c in deck[:3])) is Outcome.LOSE
    )


# -- helpers ----------------------------------------------------------------------------


def open_session(app: Casino, player: str = "ann", buy_in: int = BUY_IN) -> str:
    return open_funded_session(app, player, buy_in, deposit=DEPOSIT)


def play(app: Casino, sid: str, rid: str, bet: int = BET, raise_by: int = 0) -> RoundPlayed:
    """Bet, then raise by ``raise_by`` (capped at what the table allows) or see."""
    result = app.red_dog_bet(f"{rid}/bet", sid, bet)
    if result.status == "open":
        amount = min(raise_by, result.view["max_raise"])
        if amount:
            result = app.red_dog_raise(f"{rid}/raise", sid, amount)
        else:
            result = app.red_dog_see(f"{rid}/see", sid)
    return result


def payloads(store: Store, code: str) -> list[tuple[str, dict[str, Any]]]:
    """(topic, payload) of each stored event of one round, oldest first."""
    rid = str(round_id_for(code))
    return [
        (r.topic, json.loads(envelope.decode(r.state).payload))
        for r in read_rows(store.db)
        if r.originator_id == rid
    ]


def count_for_round(store: Store, topic: str, code: str) -> int:
    """Stored events with this topic that concern the round ``code``."""
    n = 0
    for r in read_rows(store.db):
        if r.topic != topic:
            continue
        doc = json.loads(envelope.decode(r.state).payload)
        if r.originator_id == str(round_id_for(code)) or doc.get("game_code") == code:
            n += 1
    return n


def run_verify(store: Store) -> Report:
    return verify(read_rows(store.db), store.keyring.public_keys, jobs=1)


def assert_books_balance(store: Store) -> None:
    report = run_verify(store)
    assert report.ok, report.findings


def code_time(code: str) -> datetime:
    match = CODE.match(code)
    assert match, f"{code!r} is not a Red Dog game code"
    return datetime.strptime(match.group(1), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)


def rewrite_settled_payout(store: Store, code: str, payout: int) -> None:
    """Change the recorded payout of a settled round in place, re-signed with the real key
    (a compromised writer). The Settled event is the newest of its aggregate, so its
    previous-event hash stays valid and no later event links to it."""
    rid = str(round_id_for(code))
    row = next(r for r in read_rows(store.db) if r.originator_id == rid and r.topic == SETTLED)
    env = envelope.decode(row.state)
    doc = json.loads(env.payload)
    doc["payout"] = payout
    state, _ = envelope.seal(
        store.keyring.signing_key,
        store.keyring.signing_kid,
        rid,
        row.version,
        row.topic,
        json.dumps(doc, separators=(",", ":")).encode(),
        env.prev_hash,
        trust_candidates(read_rows(store.db))[0],  # the log id (public, in the genesis)
    )
    conn = store.connect()
    try:
        if store.kind == "sqlite":
            conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
            conn.execute(
                f"UPDATE {store.table} SET state = ? WHERE rowid = ?",
                (state, row.notification_id),
            )
        else:
            conn.execute("SET session_replication_role = replica")
            conn.execute(
                f"UPDATE {store.table} SET state = %s WHERE notification_id = %s",
                (state, row.notification_id),
            )
    finally:
        conn.close()


# -- a session of rounds ----------------------------------------------------------------


def test_a_session_of_rounds_settles_every_round_and_the_books_balance(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)
    results = [
        play(app, sid, f"r{i}", bet=100 + 50 * i, raise_by=(100 + 50 * i) * (i % 2))
        for i in range(12)
    ]

    assert all(r.status == "settled" for r in results)
    staked = sum(r.staked for r in results)
    paid = sum(r.payout for r in results)
    assert app.session_balance(sid) == BUY_IN - staked + paid == results[-1].balance
    for r in results:
        report = check_round(store.db, r.code)
        assert report.ok and report.status == "settled", (r.code, report.problems)
    closed = app.close_session("close", sid)
    assert closed.final_balance == BUY_IN - staked + paid
    assert app.account_balance("ann") == DEPOSIT - BUY_IN + closed.final_balance
    assert_books_balance(store)


def test_game_code_holds_the_start_time_in_gmt_and_is_unique(store: Store, app: Casino) -> None:
    sid = open_session(app)
    before = datetime.now(UTC).replace(microsecond=0)
    codes = [play(app, sid, f"r{i}").code for i in range(8)]
    after = datetime.now(UTC)

    assert len(set(codes)) == len(codes)
    for code in codes:
        when = code_time(code)
        assert before <= when <= after
        started = payloads(store, code)[0]
        assert started[0] == STARTED
        started_at = datetime.fromisoformat(started[1]["started_at"])
        assert timedelta(0) <= started_at - when < timedelta(seconds=1)
        # The event's own time is taken a little after the round's clock read: compare it
        # with that read (milliseconds), not with the code's time (truncated to the second,
        # which a slow handler can leave more than a second behind).
        event_time = app.history.timeline(code)[0]["timestamp"]
        assert abs(datetime.fromisoformat(event_time) - started_at) < timedelta(seconds=1)


def test_a_round_is_found_by_its_game_code(seeded: Seeded, store: Store) -> None:
    app = seeded(seed_where(deals_a_winner))
    sid = open_session(app)
    result = play(app, sid, "r1", raise_by=BET)

    found = app.find_round(result.code)
    assert str(found.id) == result.round_id == str(round_id_for(result.code))
    assert (found.code, found.status, found.payout) == (
        result.code,
        "settled",
        result.payout,
    )
    report = check_round(store.db, result.code)
    assert report.ok and report.status == "settled", report.problems
    assert [s["step"] for s in report.steps] == ["started", "acted", "settled"]
    assert report.steps[-1]["payout"] == result.payout


# -- history ----------------------------------------------------------------------------


def test_account_history_lists_date_game_code_stakes_wins_and_outcome(
    with_cards: WithCards,
) -> None:
    winner, loser = {DECK: "5h 9c 7d"}, {DECK: "4s Jd Kc"}  # 7 between 5 and 9; K not in 4-J
    app = with_cards(winner, loser)
    sid = open_session(app)
    won = play(app, sid, "r1", bet=300, raise_by=300)
    lost = play(app, sid, "r2", bet=200)

    rows = app.history.account_history("ann")

    assert [r["code"] for r in rows] == [lost.code, won.code]  # newest first
    newest, oldest = rows
    assert (newest["game"], newest["stakes"], newest["wins"], newest["outcome"]) == (
        "red-dog",
        200,
        0,
        "lose",
    )
    pays = PAYS[spread(list(parse_cards(winner[DECK])))]  # type: ignore[index]
    assert (oldest["game"], oldest["stakes"], oldest["wins"], oldest["outcome"]) == (
        "red-dog",
        600,
        600 + 600 * pays,
        "win",
    )
    for row in rows:
        assert code_time(row["code"]) <= datetime.fromisoformat(row["started_at"])


def test_live_account_history_has_the_columns_of_the_history_rebuilt_from_the_log(
    store: Store, app: Casino
) -> None:
    # DESIGN §2.5: histories rebuilt from the log alone equal the live ones. audit-cli
    # `history` shows date, game, code, stakes, wins, outcome; the live history must give
    # the same six columns under the same names.
    sid = open_session(app)
    for i in range(3):
        play(app, sid, f"r{i}", raise_by=BET * (i % 2))

    live = app.history.account_history("ann")
    rebuilt = list(reversed(player_history(store.db, "ann")))

    assert [r["code"] for r in live] == [r["code"] for r in rebuilt]
    missing = [c for c in HISTORY_COLUMNS if c not in live[0]]
    assert not missing, f"live account history rows lack {missing}: {sorted(live[0])}"
    assert [{c: r[c] for c in HISTORY_COLUMNS} for r in live] == [
        {c: r[c] for c in HISTORY_COLUMNS} for r in rebuilt
    ]


def test_last_games_recalls_at_most_ten_newest_first(app: Casino) -> None:
    sid = open_session(app)
    codes = [play(app, sid, f"r{i}").code for i in range(12)]
    other = open_session(app, player="bob")
    bobs = play(app, other, "bob-r1").code

    recalled = app.history.last_games(sid)

    assert [g["code"] for g in recalled] == list(reversed(codes))[:10]
    assert len(app.history.last_games(sid, n=3)) == 3
    assert [g["code"] for g in app.history.last_games(other)] == [bobs]
    assert all(g["session_id"] == sid for g in recalled)


def test_timeline_has_every_step_of_a_round_with_its_time(seeded: Seeded) -> None:
    app = seeded(seed_where(deals_a_winner))
    sid = open_session(app)
    result = play(app, sid, "r1", raise_by=BET)

    steps = app.history.timeline(result.code)

    assert [s["step"] for s in steps] == ["started", "acted", "settled"]
    times = [datetime.fromisoformat(s["timestamp"]) for s in steps]
    assert times == sorted(times)
    assert all(t.utcoffset() == timedelta(0) for t in times)
    assert steps[0]["view"]["cards"] == result.view["cards"][:2]
    assert steps[1]["decision"] == ["raise", BET] and steps[1]["automatic"] is False
    assert steps[2]["payout"] == result.payout and steps[2]["seed"] == result.seed
    assert all("sealed_seed" not in s for s in steps)


# -- repeat, busy sessions, close -------------------------------------------------------


def test_repeat_bets_the_same_amount_as_the_last_round(with_cards: WithCards) -> None:
    app = with_cards({DECK: "4s Jd Kc"})
    sid = open_session(app)
    first = play(app, sid, "r1", bet=300, raise_by=300)
    assert first.staked == 600

    again = app.red_dog_repeat("repeat-1", sid)

    # seed 003 "Ripeti": the same bet (not bet + raise), dealt at once.
    assert again.stake == 300 and again.code != first.code
    assert len(again.view["cards"]) >= 2
    assert again.balance == first.balance - 300 + (again.payout if again.status == "settled" else 0)


def test_a_new_bet_while_a_round_is_open_is_refused_and_writes_nothing(
    with_cards: WithCards, store: Store
) -> None:
    app = with_cards({DECK: "4s Jd Kc"}, {DECK: "5h 9c 7d"})
    sid = open_session(app)
    play(app, sid, "r0")
    opened = app.red_dog_bet("r1", sid, BET)
    assert opened.status == "open"
    before = raw_rows(store)

    with pytest.raises(SessionBusy) as caught:
        app.red_dog_bet("r2", sid, BET)
    with pytest.raises(SessionBusy):
        app.red_dog_repeat("r3", sid)

    assert caught.value.code == "session-busy"
    assert raw_rows(store) == before
    assert app.session_balance(sid) == BUY_IN - 2 * BET
    assert app.open_round(sid).code == opened.code  # type: ignore[union-attr]


def test_closing_a_session_completes_its_open_round_with_an_automatic_see(
    seeded: Seeded, store: Store
) -> None:
    seed = seed_where(deals_a_winner)
    app = seeded(seed)
    sid = open_session(app)
    opened = app.red_dog_bet("r1", sid, BET)
    assert opened.status == "open"

    closed = app.close_session("close", sid)

    rnd = app.find_round(opened.code)
    assert rnd.status == "settled" and rnd.staked == BET
    acted = [doc for topic, doc in payloads(store, opened.code) if topic == ACTED]
    assert len(acted) == 1
    assert acted[0]["decision"] == ["see"] and acted[0]["automatic"] is True
    assert [str(c) for c in shuffled_deck(seed)[:3]] == rnd.view["cards"]
    assert closed.final_balance == BUY_IN - BET + rnd.payout
    assert app.account_balance("ann") == DEPOSIT - BUY_IN + closed.final_balance
    assert check_round(store.db, opened.code).ok
    assert_books_balance(store)


# -- void -------------------------------------------------------------------------------


def test_void_refunds_bet_and_raise_and_reverses_the_credited_win(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(seed_where(deals_a_winner))
    sid = open_session(app)
    won = play(app, sid, "r1", bet=300, raise_by=300)
    assert won.outcome == "win" and won.staked == 600 and won.payout > 600
    assert app.session_balance(sid) == BUY_IN - 600 + won.payout

    voided = app.void_round("void-1", won.code, "reel malfunction", "INC-7")

    assert app.session_balance(sid) == BUY_IN == voided.balance
    assert voided.status == "voided" and voided.already_voided is False
    [(_, doc)] = [(t, d) for t, d in payloads(store, won.code) if t == VOIDED]
    assert (doc["refunded"], doc["reversed_win"]) == (600, won.payout)
    assert (doc["reason"], doc["incident_id"]) == ("reel malfunction", "INC-7")
    assert count_for_round(store, REFUNDED, won.code) == 1
    assert count_for_round(store, WIN_REVERSED, won.code) == 1
    assert_books_balance(store)


def test_void_reveals_the_seed_of_the_round(seeded: Seeded, store: Store) -> None:
    seed = seed_where(deals_a_winner)
    app = seeded(seed)
    sid = open_session(app)
    opened = app.red_dog_bet("r1", sid, BET)
    assert opened.status == "open" and opened.seed is None

    voided = app.void_round("void-1", opened.code, "dealer error", "INC-1")

    assert voided.seed == seed.hex()
    docs = payloads(store, opened.code)
    assert docs[-1][0] == VOIDED and docs[-1][1]["seed"] == seed.hex()
    assert hashlib.sha256(seed).hexdigest() == docs[0][1]["commitment"]
    report = check_round(store.db, opened.code)
    assert report.ok and report.status == "voided", report.problems


def test_voiding_an_open_round_refunds_the_bet_and_frees_the_session(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(seed_where(deals_a_winner))
    sid = open_session(app)
    opened = app.red_dog_bet("r1", sid, BET)

    app.void_round("void-1", opened.code, "network outage", "INC-2")

    assert app.session_balance(sid) == BUY_IN
    assert app.open_round(sid) is None
    assert count_for_round(store, WIN_REVERSED, opened.code) == 0
    nxt = play(app, sid, "r2")  # the session takes a new round
    assert nxt.status == "settled"
    assert_books_balance(store)


def test_voiding_twice_writes_one_void_and_one_refund(seeded: Seeded, store: Store) -> None:
    app = seeded(seed_where(deals_a_winner))
    sid = open_session(app)
    won = play(app, sid, "r1", raise_by=BET)
    first = app.void_round("void-1", won.code, "malfunction", "INC-3")

    same_request = app.void_round("void-1", won.code, "malfunction", "INC-3")
    new_request = app.void_round("void-2", won.code, "malfunction", "INC-3")

    assert same_request == first
    assert new_request.already_voided is True and new_request.status == "voided"
    assert count_for_round(store, VOIDED, won.code) == 1
    assert count_for_round(store, REFUNDED, won.code) == 1
    assert count_for_round(store, WIN_REVERSED, won.code) == 1
    assert app.session_balance(sid) == BUY_IN
    assert_books_balance(store)


def test_history_shows_the_void(seeded: Seeded, store: Store) -> None:
    app = seeded(seed_where(deals_a_winner))
    sid = open_session(app)
    won = play(app, sid, "r1", raise_by=BET)
    app.void_round("void-1", won.code, "malfunction", "INC-4")

    [live] = app.history.account_history("ann")
    [rebuilt] = player_history(store.db, "ann")
    [recalled] = app.history.last_games(sid)

    for row in (live, rebuilt, recalled):
        assert (row["code"], row["outcome"], row["wins"]) == (won.code, "voided", 0)
        assert row["void_reason"] == "malfunction" and row["incident_id"] == "INC-4"
    assert [s["step"] for s in app.history.timeline(won.code)][-1] == "voided"


def test_voiding_after_the_session_closed_settles_with_the_account(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(seed_where(deals_a_loser))
    sid = open_session(app)
    lost = play(app, sid, "r1", bet=300)
    closed = app.close_session("close", sid)
    assert closed.final_balance == BUY_IN - 300

    app.void_round("void-1", lost.code, "malfunction", "INC-5")

    assert app.account_balance("ann") == DEPOSIT
    assert_books_balance(store)


def test_voiding_an_unknown_code_is_round_not_found_and_writes_nothing(
    store: Store, app: Casino
) -> None:
    sid = open_session(app)
    play(app, sid, "r1")
    before = raw_rows(store)

    with pytest.raises(RoundNotFound) as caught:
        app.void_round("void-1", "RD-20000101-000000-ZZZZ", "malfunction", "INC-6")

    assert caught.value.code == "round-not-found"
    assert caught.value.ids == {"game_code": "RD-20000101-000000-ZZZZ"}
    assert raw_rows(store) == before


# -- audit-cli round --------------------------------------------------------------------


def audit_round(store: Store, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "audit_cli.main", "round", code, "--db", store.db, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_audit_cli_round_passes_a_good_round_and_fails_a_re_signed_payout(
    seeded: Seeded, store: Store
) -> None:
    app = seeded(seed_where(deals_a_loser))
    sid = open_session(app)
    lost = play(app, sid, "r1", bet=300)
    assert lost.payout == 0

    good = audit_round(store, lost.code)
    assert good.returncode == 0, good.stdout + good.stderr
    assert json.loads(good.stdout)["ok"] is True

    rewrite_settled_payout(store, lost.code, 600)
    bad = audit_round(store, lost.code)

    assert bad.returncode == 1, bad.stdout + bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["ok"] is False
    assert any("payout" in p for p in doc["problems"]), doc["problems"]
