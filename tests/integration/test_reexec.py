"""Re-execution in ``audit-cli verify`` (issue 22): an insider with the signing key rewrites
a round's money (every row re-signed, every chain re-linked, every checkpoint re-signed,
``tests/integration/forge.py``); signatures, chains, checkpoints and books all verify,
and only the comparison with what the rules pay catches it. An honest log never trips it.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import audit_cli.verify as verify_module
from api.app import create_app
from audit_cli.checker import Report
from audit_cli.main import main as audit_main
from audit_cli.reexec import MoneyFinding
from audit_cli.rounds import default_keys
from audit_cli.rows import Row, read_rows
from audit_cli.verify import verify_db
from ledger import contracts
from ledger.casino import Casino
from ledger.keys import fingerprint
from tests.conftest import Store
from tests.helpers import open_session
from tests.integration.forge import DROP, KEEP, TOPIC, payload, rewrite
from tests.integration.table_helpers import Live
from tests.integration.test_http_e2e import OPERATOR
from tests.integration.test_table_shoe import ONE_DECK, POLICY, play_a_round
from tests.seamless_support import Seamless, open_casino
from tests.wallet_fakes import wallet_over_http

FORGED = 1_000
SHOE_SEED = hashlib.sha256(b"reexec table shoe").digest()
"""The tables' shoe: the same rounds every run (a win to forge, two seats to swap)."""
FIXTURES = Path(__file__).parent.parent / "fixtures"


def pin(store: Store) -> str:
    return "SHA256:" + fingerprint(store.keyring.public_keys[store.keyring.signing_kid])


def verify(store: Store, jobs: int = 1) -> Report:
    return verify_db(store.db, jobs=jobs, pin=pin(store))


def money(report: Report) -> list[MoneyFinding]:
    return [f for f in report.findings if isinstance(f, MoneyFinding)]


def cli(store: Store, *args: str) -> int:
    return audit_main([*args, "--db", store.db])


# -- rounds with a win ------------------------------------------------------------------


def red_dog_win(app: Casino, sid: str) -> str:
    for i in range(60):
        result = app.red_dog_bet(f"rd-{i}", sid, 100)
        if result.status == "open":
            result = app.red_dog_see(f"rd-see-{i}", sid)
        if result.payout:
            return str(result.code)
    raise AssertionError("no Red Dog win in 60 rounds")


def video_poker_win(app: Casino, sid: str, variant: str, lines: int) -> str:
    for i in range(80):
        dealt = app.vp_deal(f"{variant}-{i}", sid, variant, 10, 5, lines)
        shown = dealt
        if shown.status == "open":
            shown = app.vp_act(f"{variant}-draw-{i}", sid, ["draw", dealt.view["recommended"]])
        if shown.status == "open":
            shown = app.vp_act(f"{variant}-collect-{i}", sid, ["collect"])
        assert shown.status == "settled"
        if shown.payout:
            return str(shown.code)
    raise AssertionError(f"no {variant} win in 80 rounds")


def rounds_log(store: Store) -> dict[str, Any]:
    """A Red Dog, a 4-line and a multi-hand round with a win, for two players."""
    app = store.open()
    sid = open_session(app, "zoe", buy_in=200_000)
    other = open_session(app, "yan", buy_in=20_000)
    codes = {
        "red-dog": red_dog_win(app, sid),
        "4-line": video_poker_win(app, sid, "jb-4line", 4),
        "multi-hand": video_poker_win(app, sid, "jb-multi", 3),
    }
    app.red_dog_bet("yan-1", other, 100)  # left open (or settled at once: a pair)
    pending = int(app.open_round(other) is not None)
    app.close_session("close-zoe", sid)
    app.seal()
    app.close()
    return {"session": sid, "other": other, "codes": codes, "pending": pending}


@pytest.fixture
def log(store: Store) -> dict[str, Any]:
    return rounds_log(store)


def of_round(row: Row, doc: dict[str, Any], topic: str, code: str) -> bool:
    return row.topic == topic and code in (doc.get("game_code"), doc.get("round_id"))


def add_to_win(code: str, extra: int, session: str | None = None) -> Any:
    def edit(row: Row, doc: dict[str, Any]) -> str:
        mine = session is None or row.originator_id == session
        if mine and (
            of_round(row, doc, contracts.SESSION_WIN_CREDITED, code)
            or of_round(row, doc, contracts.SESSION_ROUND_SETTLED, code)
        ):
            doc["amount"] += extra
            doc["movement"]["amount"] += extra
        return KEEP

    return edit


def test_an_honest_log_of_rounds_re_executes_clean(store: Store, log: dict[str, Any]) -> None:
    report = verify(store)
    assert report.ok, report.findings
    assert report.rounds is not None and report.rounds["rounds_reexecuted"] >= 3
    # yan's round is open unless its first cards settled it: counted, not passed silently
    assert report.rounds["rounds_pending"] == log["pending"]
    assert verify(store, jobs=2).to_dict() == report.to_dict()


@pytest.mark.requirement("GLI-19-DATA-INTEGRITY")
@pytest.mark.parametrize("game", ["red-dog", "4-line", "multi-hand"])
def test_a_forged_win_credit_re_signed_with_the_key_is_caught(
    store: Store, log: dict[str, Any], game: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = log["codes"][game]
    rewrite(store, add_to_win(code, FORGED))
    report = verify(store)
    # Everything a key can re-make verifies: the rows, the chains, checkpoints, books.
    assert {f.check for f in report.findings} == {"reexec-amount"}, report.findings
    (found,) = money(report)
    assert found.game_code == code and found.kind == "win"
    assert found.recorded == found.expected + FORGED and found.expected > 0
    capsys.readouterr()
    assert cli(store, "verify", "--pin", pin(store)) == 1
    out = capsys.readouterr().out
    assert code in out and str(found.recorded) in out and str(found.expected) in out
    assert cli(store, "round", code) == 1


def test_a_lowered_stake_debit_is_caught(store: Store, log: dict[str, Any]) -> None:
    code = log["codes"]["red-dog"]

    def edit(row: Row, doc: dict[str, Any]) -> str:
        if of_round(row, doc, contracts.SESSION_STAKE_DEBITED, code):
            doc["amount"] -= 40
            doc["movement"]["amount"] -= 40
        return KEEP

    rewrite(store, edit)
    found = money(verify(store))
    assert [(f.game_code, f.kind, f.recorded, f.expected) for f in found] == [
        (code, "stake", 60, 100)
    ]


def test_a_refund_added_to_a_round_that_was_not_voided_is_caught(
    store: Store, log: dict[str, Any]
) -> None:
    code = log["codes"]["4-line"]

    def edit(row: Row, doc: dict[str, Any]) -> str:
        if of_round(row, doc, contracts.SESSION_WIN_CREDITED, code):
            doc[TOPIC] = contracts.SESSION_REFUNDED  # the credit's money, now a refund
        return KEEP

    rewrite(store, edit)
    found = {(f.kind, f.check) for f in money(verify(store)) if f.game_code == code}
    assert ("refund", "reexec-amount") in found and ("win", "reexec-no-movement") in found


def test_a_credit_moved_to_another_session_is_caught(store: Store, log: dict[str, Any]) -> None:
    code, other = log["codes"]["multi-hand"], log["other"]

    def edit(row: Row, doc: dict[str, Any]) -> str:
        if of_round(row, doc, contracts.SESSION_WIN_CREDITED, code):
            doc["movement"]["destination"] = f"session:{other}"
            return str(other)
        return KEEP

    rewrite(store, edit)
    report = verify(store)
    found = money(report)
    assert [f.check for f in found] == ["reexec-session"], report.findings
    assert found[0].game_code == code and found[0].originator_id == other


def test_a_settled_event_removed_with_its_credit_kept_is_caught(
    store: Store, log: dict[str, Any]
) -> None:
    code = log["codes"]["red-dog"]
    rid = _round_id(code)

    def edit(row: Row, doc: dict[str, Any]) -> str:
        return DROP if row.originator_id == rid and row.topic == contracts.ROUND_SETTLED else KEEP

    rewrite(store, edit)
    report = verify(store)
    found = money(report)
    assert {(f.game_code, f.kind, f.check) for f in found} == {(code, "win", "reexec-amount")}
    assert found[0].expected == 0 and report.rounds is not None
    assert report.rounds["rounds_pending"] == log["pending"] + 1


def _round_id(code: str) -> str:
    from ledger.rounds import round_id_for

    return str(round_id_for(code))


@pytest.mark.parametrize(("fixture", "rounds"), [("legacy-v01", 1), ("legacy_log_v1", 6)])
def test_logs_written_by_older_code_and_rules_versions_re_execute_clean(
    tmp_path: Path, fixture: str, rounds: int
) -> None:
    """Format 1 rows, session events that call the game code ``round_id``, video-poker
    rounds of rules version ``1``: every settled round re-runs and its money matches."""
    copy = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, copy)
    db = str(copy / "casino.sqlite")
    report = verify_db(db, default_keys(db), jobs=1)
    assert report.ok, report.findings
    assert report.rounds is not None and report.rounds["rounds_reexecuted"] == rounds


# -- live blackjack tables --------------------------------------------------------------


def table_log(store: Store, rounds: int | None) -> tuple[Live, dict[str, str], list[Any]]:
    """Rounds at a live table on a real one-deck shoe (``SHOE_SEED``): ``rounds`` of them
    (the shoe stays live) or, None, until the cut card (the shoe's seed is then revealed)."""
    live = Live(store, config=ONE_DECK, seeds=(SHOE_SEED,))
    sessions = {name: live.player(name, 50_000) for name in POLICY}
    live.tick()
    played: list[Any] = []
    while (rounds is None and (not played or played[-1].next_start is not None)) or (
        rounds is not None and len(played) < rounds
    ):
        played.append(play_a_round(live, sessions, len(played) + 1))
        assert len(played) < 30
    live.app.seal()
    shuffled = [payload(r) for r in read_rows(store.db) if r.topic == contracts.SHOE_SHUFFLED]
    assert shuffled[0]["commitment"] == hashlib.sha256(SHOE_SEED).hexdigest()
    return live, sessions, played


def table_win(store: Store, played: list[Any]) -> tuple[str, str]:
    """(game code, session) of a seat whose round credited it a win."""
    for row in read_rows(store.db):
        if row.topic in (contracts.SESSION_WIN_CREDITED, contracts.SESSION_ROUND_SETTLED):
            doc = payload(row)
            if doc["game_code"] in {r.code for r in played}:
                return str(doc["game_code"]), row.originator_id
    raise AssertionError("no table win")


def test_an_honest_live_shoe_re_executes_clean_from_the_cards_shown(store: Store) -> None:
    table_log(store, 3)
    report = verify(store)
    assert report.ok, report.findings
    assert report.rounds is not None
    assert report.rounds["table_rounds_reexecuted"] == 3
    assert report.rounds["table_rounds_shoe_live"] == 3  # cards checked once revealed


def test_an_honest_revealed_shoe_re_executes_clean_and_its_cards_are_checked(
    store: Store,
) -> None:
    _, _, played = table_log(store, None)
    report = verify(store, jobs=2)
    assert report.ok, report.findings
    assert report.rounds is not None
    assert report.rounds["table_rounds_cards_checked"] == len(played) >= 3
    assert report.rounds["table_rounds_shoe_live"] == 0


@pytest.mark.requirement("GLI-19-DATA-INTEGRITY")
def test_a_forged_table_win_credit_re_signed_with_the_key_is_caught(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, played = table_log(store, 3)
    code, session = table_win(store, played)
    rewrite(store, add_to_win(code, FORGED, session))
    report = verify(store)
    assert {f.check for f in report.findings} == {"reexec-amount"}, report.findings
    (found,) = money(report)
    assert (found.game_code, found.kind, found.session_id) == (code, "win", session)
    assert found.recorded == found.expected + FORGED
    capsys.readouterr()
    assert cli(store, "verify", "--pin", pin(store)) == 1
    out = capsys.readouterr().out
    assert code in out and str(found.recorded) in out and str(found.expected) in out
    assert cli(store, "round", code) == 1
    assert cli(store, "round", code, "--session", session) == 1


def test_two_seats_results_swapped_with_equal_payouts_fail_round_without_session(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two seats' recorded results exchanged (the money untouched, each seat's payout the
    same): ``round`` compares every seat's hands and stakes with the engine."""
    _, _, played = table_log(store, 3)
    results: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for row in read_rows(store.db):
        if row.topic == contracts.SEAT_SETTLED:
            doc = payload(row)
            results.setdefault(doc["result"]["returned"], []).append((row.originator_id, doc))
    pair = next(
        (seats[0], seats[1])
        for seats in results.values()
        if len(seats) >= 2 and seats[0][1]["result"] != seats[1][1]["result"]
    )
    swap = {pair[0][0]: pair[1][1]["result"], pair[1][0]: pair[0][1]["result"]}

    def edit(row: Row, doc: dict[str, Any]) -> str:
        if row.topic == contracts.SEAT_SETTLED and row.originator_id in swap:
            doc["result"] = swap[row.originator_id]
        return KEEP

    rewrite(store, edit)
    code = next(r.code for r in played if _seat_in(store, r, pair[0][0]))
    assert cli(store, "round", code) == 1
    assert "hands" in capsys.readouterr().out
    assert {f.check for f in verify(store).findings} == {"reexec-table"}


def _seat_in(store: Store, rnd: Any, seat: str) -> bool:
    return seat in rnd.seats


# -- voided and seamless rounds: no false alarm --------------------------------------------


def test_voided_rounds_re_execute_clean_on_the_session_and_on_the_account(store: Store) -> None:
    """A settled win voided (stakes refunded, win reversed on the session), a round voided
    while open, and a round voided after its session closed (on the account)."""
    app = store.open()
    sid = open_session(app, "ann", buy_in=200_000)
    won = red_dog_win(app, sid)
    app.void_round("void-won", won, "malfunction", "I-1")
    for i in range(40):
        opened = app.red_dog_bet(f"open-{i}", sid, 100)
        if opened.status == "open":
            app.red_dog_raise(f"raise-{i}", sid, 100)
            app.void_round("void-open", opened.code, "malfunction", "I-2")
            break
    else:
        raise AssertionError("no Red Dog round left open in 40")
    later = video_poker_win(app, sid, "jb-4line", 4)
    app.close_session("close", sid)
    app.void_round("void-closed", later, "malfunction", "I-3")
    app.seal()
    report = verify(store)
    assert report.ok, report.findings
    assert report.rounds is not None and report.rounds["rounds_reexecuted"] >= 3


@contextmanager
def seamless_on(store: Store, tmp_path: Path) -> Iterator[Seamless]:
    """``tests.seamless_support.seamless`` on this test's store (SQLite or PostgreSQL)."""
    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet", read_timeout=1.0) as wallet:
        casino = open_casino(store.data_dir, wallet.client, store.database_url)
        try:
            with TestClient(create_app(casino)) as http:
                yield Seamless(wallet, casino, http, store.data_dir)
        finally:
            casino.close()


def test_seamless_rounds_re_execute_clean(store: Store, tmp_path: Path) -> None:
    """Seamless sessions: the stakes and wins move between the operator's wallet and the
    house, a void rolls back every debit; each is compared like a transfer session's."""
    with seamless_on(store, tmp_path) as s:
        sid, token = s.open("sam", 100_000)
        codes = set()
        for _ in range(6):
            doc = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 200}, token).json()
            if doc["status"] == "open":
                doc = s.post(f"/v1/sessions/{sid}/red-dog/raise", {"amount": 200}, token).json()
            codes.add(doc["code"])
        deal = {"variant": "jb-4line", "coin_value": 10, "coins": 5, "lines": 4}
        doc = s.post(f"/v1/sessions/{sid}/video-poker/deal", deal, token).json()
        codes.add(doc["code"])
        s.post(f"/v1/sessions/{sid}/video-poker/draw", {}, token)
        s.post(f"/v1/sessions/{sid}/video-poker/collect", None, token)
        while True:  # a void rolls back every debit at the wallet
            doc = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 300}, token).json()
            if doc["status"] == "open":
                void = {"reason": "malfunction", "incident_id": "I-9"}
                assert s.post(f"/v1/rounds/{doc['code']}/void", void, OPERATOR).status_code == 200
                break
        s.deliver()
        s.casino.seal()
        key = s.casino.keyring.public_keys[s.casino.keyring.signing_kid]
        report = verify_db(store.db, jobs=1, pin="SHA256:" + fingerprint(key))
    assert report.ok, report.findings
    assert report.rounds is not None and report.rounds["rounds_reexecuted"] >= len(codes) + 1


@pytest.mark.parametrize("chunk", [3, 50])
def test_rounds_split_across_chunks_re_execute_alike(
    store: Store, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers re-run the rounds whole in their chunk; the parent joins the others and
    the table rounds: with chunks of a few rows nearly every round is split, and the
    report (honest, then with a forged credit) is the same as with whole chunks."""
    codes = rounds_log(store)["codes"]
    table_log(store, 2)
    whole = verify(store)
    assert whole.ok, whole.findings
    monkeypatch.setattr(verify_module, "CHUNK", chunk)
    assert verify(store, jobs=2).to_dict() == whole.to_dict()
    monkeypatch.undo()
    rewrite(store, add_to_win(codes["4-line"], FORGED))
    forged = verify(store)
    assert [f.game_code for f in money(forged)] == [codes["4-line"]]
    monkeypatch.setattr(verify_module, "CHUNK", chunk)
    assert verify(store, jobs=2).to_dict() == forged.to_dict()


# -- bounded memory: a round dropped once matched, re-opened by what comes later ----------


def voided_log(store: Store) -> dict[str, str]:
    """A settled win voided long after (the void and its refund and reversal many rows
    later), and a 4-line win voided after its session closed (on the account)."""
    app = store.open()
    sid = open_session(app, "ann", buy_in=200_000)
    won = red_dog_win(app, sid)
    for i in range(6):  # rows between the round and its void
        app.red_dog_bet(f"between-{i}", sid, 100)
        if app.open_round(sid) is not None:
            app.red_dog_see(f"between-see-{i}", sid)
    app.void_round("void-won", won, "malfunction", "I-1")
    later = video_poker_win(app, sid, "jb-4line", 4)
    multi = video_poker_win(app, sid, "jb-multi", 3)
    app.close_session("close", sid)
    app.void_round("void-closed", later, "malfunction", "I-3")
    app.seal()
    app.close()
    return {"won": won, "later": later, "multi": multi}


def _findings(report: Report) -> list[tuple[Any, ...]]:
    return sorted(
        (f.check, f.game_code, f.kind, f.recorded, f.expected, f.notification_id)
        for f in money(report)
    )


def test_rounds_dropped_once_matched_are_re_opened_by_a_later_void(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With chunks of a few rows each round is compared and dropped as soon as its money
    is closed; its void, refund and reversal many chunks later bring it back from the
    store: no false alarm, and the same counts as with the whole log in one chunk."""
    voided_log(store)
    whole = verify(store)
    assert whole.ok, whole.findings
    monkeypatch.setattr(verify_module, "CHUNK", 3)
    assert verify(store, jobs=2).to_dict() == whole.to_dict()
    assert verify(store, jobs=1).to_dict() == whole.to_dict()


@pytest.mark.parametrize("forge", ["refund", "relabel"])
def test_a_late_forged_movement_of_a_dropped_round_is_caught(
    store: Store, monkeypatch: pytest.MonkeyPatch, forge: str
) -> None:
    """A forged refund long after its round was dropped, or a later round's win credit
    re-labelled with a dropped round's code: caught as with the whole log in one chunk."""
    codes = voided_log(store)

    def edit(row: Row, doc: dict[str, Any]) -> str:
        if forge == "refund" and of_round(row, doc, contracts.SESSION_REFUNDED, codes["won"]):
            doc["amount"] += FORGED
            doc["movement"]["amount"] += FORGED
        if forge == "relabel" and of_round(
            row, doc, contracts.SESSION_WIN_CREDITED, codes["multi"]
        ):
            doc["game_code"] = codes["won"]
        return KEEP

    rewrite(store, edit)
    whole = verify(store)
    assert _findings(whole), whole.findings
    assert {f.game_code for f in money(whole)} == (
        {codes["won"]} if forge == "refund" else {codes["won"], codes["multi"]}
    )
    monkeypatch.setattr(verify_module, "CHUNK", 3)
    for jobs in (1, 2):
        chunked = verify(store, jobs=jobs)
        assert _findings(chunked) == _findings(whole)
        assert chunked.rounds == whole.rounds


@pytest.mark.parametrize("forge", ["honest", "relabel"])
def test_a_dropped_table_round_is_re_opened_by_a_late_movement(
    store: Store, monkeypatch: pytest.MonkeyPatch, forge: str
) -> None:
    """With chunks of a few rows each table round is dropped once every seat's money is
    matched; a later round's win credit re-labelled with the first round's code brings
    it back from the store: the same findings and counts as with the whole log in one
    chunk (and an honest log stays clean)."""
    _, _, played = table_log(store, 4)
    first = played[0].code
    later = {r.code for r in played[2:]}
    if forge == "relabel":
        relabelled: list[str] = []

        def edit(row: Row, doc: dict[str, Any]) -> str:
            if (
                not relabelled
                and row.topic in (contracts.SESSION_WIN_CREDITED, contracts.SESSION_ROUND_SETTLED)
                and doc["game_code"] in later
            ):
                relabelled.append(doc["game_code"])
                doc["game_code"] = first
            return KEEP

        rewrite(store, edit)
        assert relabelled
    whole = verify(store)
    if forge == "honest":
        assert whole.ok, whole.findings
    else:
        assert {f.game_code for f in money(whole)} == {first, *relabelled}, whole.findings
    monkeypatch.setattr(verify_module, "CHUNK", 3)
    for jobs in (1, 2):
        chunked = verify(store, jobs=jobs)
        assert _findings(chunked) == _findings(whole)
        assert chunked.rounds == whole.rounds
