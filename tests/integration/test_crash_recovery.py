"""Crashes and restarts mid-round (DESIGN §1.5, §2.1): nothing half-applied, same cards after.

The crash tests build a store with a process of their own, then run a child process on the
embedded SQLite store that forks once per crash point. Each fork opens a fresh Casino on
its own copy of the store and plays one step of a round (the bet, the raise or the see),
dying with ``os._exit`` part way through the step's one transaction: after 0, 1, 2, ...
of its rows are written but before COMMIT, and finally just after COMMIT, before the
client hears back. The parent then opens a new Casino on each copy, finds the round,
checks that the player sees the same cards as before the crash, lets the client retry its
request, completes the round, and checks the log and the books.

The restart tests do the same within one process, on SQLite and PostgreSQL: close the
application mid-round and open a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audit_cli.rounds import check_round
from audit_cli.rows import read_rows
from audit_cli.verify import verify
from games.red_dog.engine import shuffled_deck, spread_of
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.results import RoundPlayed
from ledger.rounds import commitment
from ledger.settings import Settings
from tests.conftest import Store

REPO = Path(__file__).resolve().parents[2]
DEPOSIT = 100_000
BUY_IN = 20_000
BET = 300

CHILD = r'''
"""Fork once per crash point; each fork plays one step and dies part way through it."""
import json
import os
import shutil
import sys
from pathlib import Path

from ledger.bootstrap import bootstrap
from ledger.settings import Settings

config = json.loads(Path(sys.argv[1]).read_text())
base, out, step = Path(config["base"]), Path(config["out"]), config["step"]


def crash_during_the_step(data_dir: Path, cut: int) -> None:
    # A fake seed source: every fork deals the same cards, so each crash point of a bet
    # interrupts the same transaction.
    app = bootstrap(
        Settings(data_dir=data_dir, database_url=None),
        seed_source=lambda: bytes.fromhex(config["seed"]),
    )
    recorder = app.recorder
    write_and_commit = recorder.insert_events

    def insert_then_crash(stored_events, **kwargs):
        rows = len(stored_events)
        (data_dir / "crash.json").write_text(json.dumps({"rows": rows}))
        if cut >= rows:
            write_and_commit(stored_events, **kwargs)
            os._exit(1)  # committed, but the client never hears back
        with recorder.datastore.transaction(commit=True) as cursor:
            recorder._insert_events(cursor, stored_events[:cut], **kwargs)
            os._exit(1)  # the power fails before COMMIT

    recorder.insert_events = insert_then_crash
    sid, rid = config["session_id"], config["request_id"]
    if step == "bet":
        app.red_dog_bet(rid, sid, config["amount"])
    elif step == "raise":
        app.red_dog_raise(rid, sid, config["amount"])
    else:
        app.red_dog_see(rid, sid)
    os._exit(2)  # the step finished without writing: not what the test expects


crashes = []
for cut in range(30):
    data_dir = out / f"{step}-cut-{cut}"
    shutil.copytree(base, data_dir)
    pid = os.fork()
    if pid == 0:
        try:
            crash_during_the_step(data_dir, cut)
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    report = json.loads((data_dir / "crash.json").read_text())
    crashes.append({"cut": cut, "rows": report["rows"], "dir": str(data_dir),
                    "exit": os.waitstatus_to_exitcode(status)})
    if cut >= report["rows"]:
        break
print(json.dumps(crashes))
'''


# -- helpers ----------------------------------------------------------------------------


def open_store(data_dir: Path) -> Casino:
    """The embedded default: SQLite in ``data_dir``, keys generated there on first run."""
    return bootstrap(Settings(data_dir=data_dir, database_url=None))


def bet_until_a_round_waits(app: Casino, sid: str) -> RoundPlayed:
    """Bet until the two cards show a spread (pairs and consecutive cards settle at once)."""
    for i in range(100):
        result = app.red_dog_bet(f"setup-bet-{i}", sid, BET)
        if result.status == "open":
            return result
    raise AssertionError("100 deals in a row settled at once")


def build_base(base: Path, with_open_round: bool) -> dict[str, Any]:
    app = open_store(base)
    try:
        app.open_account("open", "ann", "EUR")
        app.deposit("deposit", "ann", DEPOSIT)
        sid = str(app.open_session("buy-in", "ann", BUY_IN).session_id)
        shown = bet_until_a_round_waits(app, sid) if with_open_round else None
    finally:
        app.close()
    return {"session_id": sid, "shown": shown}


def sqlite_rows(data_dir: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(data_dir / "casino.sqlite")
    try:
        return conn.execute(
            "SELECT rowid, originator_id, originator_version, topic, state "
            "FROM stored_events ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def seed_where(first_two: str) -> bytes:
    """A seed from a fixed series whose first two cards are a ``spread``, a ``pair`` or
    ``consecutive`` (the last two settle on the deal)."""
    for i in range(10_000):
        seed = hashlib.sha256(f"crash-recovery/{i}".encode()).digest()
        a, b = shuffled_deck(seed)[:2]
        gap = spread_of(a.rank, b.rank)
        kind = "pair" if gap is None else "consecutive" if gap == 0 else "spread"
        if kind == first_two:
            return seed
    raise AssertionError(f"no {first_two} in the series")


def crash_at_every_point(
    tmp_path: Path,
    base: Path,
    step: str,
    session_id: str,
    request_id: str,
    amount: int = 0,
    seed: bytes = bytes(32),
) -> list[dict[str, Any]]:
    config = tmp_path / f"{step}.json"
    config.write_text(
        json.dumps(
            {
                "base": str(base),
                "out": str(tmp_path),
                "step": step,
                "session_id": session_id,
                "request_id": request_id,
                "amount": amount,
                "seed": seed.hex(),
            }
        )
    )
    script = tmp_path / "crash_child.py"
    script.write_text(CHILD)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, str(script), str(config)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    crashes: list[dict[str, Any]] = json.loads(proc.stdout)
    assert all(c["exit"] == 1 for c in crashes), crashes
    assert len(crashes) == crashes[-1]["rows"] + 1  # before each row, and after COMMIT
    return crashes


def check_rows_after_crash(base_rows: list[Any], crash: dict[str, Any]) -> None:
    after = sqlite_rows(Path(crash["dir"]))
    if crash["cut"] < crash["rows"]:
        assert after == base_rows, f"rows of an uncommitted step survived: {crash}"
    else:
        assert after[: len(base_rows)] == base_rows
        assert len(after) == len(base_rows) + crash["rows"]


def check_cards_and_books(app: Casino, data_dir: Path, sid: str, result: RoundPlayed) -> None:
    """The round re-derives from its seed, the session closes with what the rounds say,
    and the whole log verifies."""
    assert result.status == "settled"
    seed = bytes.fromhex(result.seed)
    assert commitment(seed) == result.commitment
    cards = result.view["cards"]
    assert cards == [str(c) for c in shuffled_deck(seed)[: len(cards)]]
    db = str(data_dir / "casino.sqlite")
    assert check_round(db, result.code).ok
    games = app.history.last_games(sid, n=1_000)
    staked, won = sum(g["stakes"] for g in games), sum(g["wins"] for g in games)
    assert app.session_balance(sid) == BUY_IN - staked + won
    closed = app.close_session("close", sid)
    assert closed.final_balance == BUY_IN - staked + won
    assert app.account_balance("ann") == DEPOSIT - BUY_IN + closed.final_balance
    keys = Keyring.open_dir(data_dir / "keys", create=False).public_keys
    report = verify(read_rows(db), keys, jobs=1)
    assert report.ok, report.findings


# -- crashes ----------------------------------------------------------------------------


@pytest.mark.parametrize("first_two", ["spread", "pair"])
def test_a_crash_anywhere_in_a_bet_leaves_no_half_round_and_the_retry_deals_once(
    tmp_path: Path, first_two: str
) -> None:
    # A spread leaves the round open after the bet; a pair settles it in the same
    # transaction (Started, then Settled), so a crash can fall between those two as well.
    base = tmp_path / "base"
    sid = build_base(base, with_open_round=False)["session_id"]
    base_rows = sqlite_rows(base)
    seed = seed_where(first_two)

    for crash in crash_at_every_point(tmp_path, base, "bet", sid, "bet-1", BET, seed):
        check_rows_after_crash(base_rows, crash)
        data_dir = Path(crash["dir"])
        app = open_store(data_dir)
        try:
            committed = crash["cut"] >= crash["rows"]
            games = app.history.last_games(sid)
            assert len(games) == (1 if committed else 0), crash
            if committed:
                survivor = app.find_round(games[0]["code"])
                assert app.session_balance(sid) == BUY_IN - BET + survivor.payout
                assert (app.open_round(sid) is None) == (first_two == "pair")
            else:
                assert app.open_round(sid) is None and app.session_balance(sid) == BUY_IN

            retried = app.red_dog_bet("bet-1", sid, BET)  # the client retries its request

            if committed:
                assert retried.code == survivor.code
                assert retried.view == survivor.view
                assert retried.view["cards"][:2] == [str(c) for c in shuffled_deck(seed)[:2]]
                assert len(sqlite_rows(data_dir)) == len(base_rows) + crash["rows"]
            assert app.session_balance(sid) == retried.balance
            result = retried
            if retried.status == "open":
                result = app.red_dog_see("see-1", sid)
                assert result.view["cards"][:2] == retried.view["cards"]
            check_cards_and_books(app, data_dir, sid, result)
        finally:
            app.close()


@pytest.mark.parametrize("step", ["see", "raise"])
def test_a_crash_anywhere_in_a_decision_resumes_with_the_same_cards(
    tmp_path: Path, step: str
) -> None:
    base = tmp_path / "base"
    built = build_base(base, with_open_round=True)
    sid, shown = built["session_id"], built["shown"]
    base_rows = sqlite_rows(base)
    amount = BET if step == "raise" else 0

    def decide(app: Casino) -> RoundPlayed:
        if step == "raise":
            return app.red_dog_raise("decide-1", sid, amount)
        return app.red_dog_see("decide-1", sid)

    for crash in crash_at_every_point(tmp_path, base, step, sid, "decide-1", amount):
        check_rows_after_crash(base_rows, crash)
        data_dir = Path(crash["dir"])
        app = open_store(data_dir)
        try:
            committed = crash["cut"] >= crash["rows"]
            survivor = app.open_round(sid)
            if committed:
                assert survivor is None
                rnd = app.find_round(shown.code)
                assert rnd.status == "settled" and rnd.view["cards"][:2] == shown.view["cards"]
                balance = app.session_balance(sid)
            else:
                assert survivor is not None and survivor.code == shown.code
                assert survivor.view == shown.view  # the same two cards, still deciding
                assert app.session_balance(sid) == shown.balance

            result = decide(app)  # the client retries its request

            assert result.code == shown.code
            assert result.view["cards"][:2] == shown.view["cards"]
            assert result.staked == BET + amount
            if committed:
                assert app.session_balance(sid) == balance  # the retry moved nothing
                assert len(sqlite_rows(data_dir)) == len(base_rows) + crash["rows"]
            check_cards_and_books(app, data_dir, sid, result)
        finally:
            app.close()


# -- restarts ---------------------------------------------------------------------------


def open_session(app: Casino) -> str:
    app.open_account("open", "ann", "EUR")
    app.deposit("deposit", "ann", DEPOSIT)
    return str(app.open_session("buy-in", "ann", BUY_IN).session_id)


def test_a_round_resumes_with_the_same_cards_after_a_restart(store: Store) -> None:
    app = store.open()
    sid = open_session(app)
    shown = bet_until_a_round_waits(app, sid)
    app.close()

    again = store.open()
    rnd = again.open_round(sid)
    assert rnd is not None and rnd.code == shown.code and rnd.view == shown.view
    assert again.session_balance(sid) == shown.balance
    result = again.red_dog_raise("raise-1", sid, BET)

    seed = bytes.fromhex(result.seed)
    assert result.view["cards"] == [str(c) for c in shuffled_deck(seed)[:3]]
    assert result.view["cards"][:2] == shown.view["cards"]
    assert check_round(store.db, shown.code).ok
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings


def test_closing_a_session_after_a_restart_completes_the_round_with_the_same_cards(
    store: Store,
) -> None:
    app = store.open()
    sid = open_session(app)
    shown = bet_until_a_round_waits(app, sid)
    app.close()

    again = store.open()
    closed = again.close_session("close", sid)

    rnd = again.find_round(shown.code)
    assert rnd.status == "settled" and rnd.decisions == [["see"]]
    assert rnd.view["cards"][:2] == shown.view["cards"]
    assert closed.final_balance == shown.balance + rnd.payout
    assert again.account_balance("ann") == DEPOSIT - BUY_IN + closed.final_balance
    steps = check_round(store.db, shown.code).steps
    assert [s.get("automatic") for s in steps if s["step"] == "acted"] == [True]
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings
