"""A player's statement: every movement with its running balance, which equals the live
balances and the ones ``audit-cli verify --balances`` rebuilds, over HTTP and audit-cli."""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from audit_cli.main import main as audit_cli
from audit_cli.rounds import player_history
from audit_cli.rows import read_rows
from audit_cli.verify import verify
from ledger.accounts import account_id_for
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.results import RoundPlayed
from ledger.statement import statements
from tests.conftest import Store

OPERATOR = "statement-operator-token-0123456789"
AUDITOR = "statement-auditor-token-0123456789"
PLAYER = "stella"
KINDS = {"deposit", "buy-in", "stake", "win", "refund", "reversal", "session-return"}


class CountingSeeds:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> bytes:
        self.n += 1
        return hashlib.sha256(f"statement-{self.n}".encode()).digest()


def win_a_round(app: Casino, sid: str, tag: str) -> RoundPlayed:
    """Play 4-line rounds until one wins; return the winning (settled) round."""
    for i in range(100):
        r = app.vp_deal(f"{tag}-{i}", sid, "jb-4line", 10, 5, 4)
        r = app.vp_act(f"{tag}-{i}-draw", sid, ["draw", r.view["recommended"]])
        if r.status == "open":
            r = app.vp_act(f"{tag}-{i}-collect", sid, ["collect"])
        if r.payout > 0:
            return r
    raise AssertionError("no winning round in 100")


@pytest.fixture
def played(store: Store) -> dict[str, Any]:
    """Deposits, two sessions with wins, a void while the session is open and one after it
    closed, a withdrawal, and a third session left open."""
    app = bootstrap(store.settings(), store.keyring, seed_source=CountingSeeds())
    store.apps.append(app)
    app.open_account("open", PLAYER, "EUR")
    app.deposit("dep-1", PLAYER, 50_000)
    first = app.open_session("buy-1", PLAYER, 20_000).session_id
    early = win_a_round(app, first, "a")
    late = win_a_round(app, first, "b")
    void_early = app.void_round("void-early", early.code, "display fault", "INC-1")  # open
    app.close_session("close-1", first)
    void_late = app.void_round("void-late", late.code, "display fault", "INC-2")  # closed
    app.deposit("dep-2", PLAYER, 7_000)
    second = app.open_session("buy-2", PLAYER, 10_000).session_id
    win_a_round(app, second, "c")
    app.close_session("close-2", second)
    app.withdraw("wd", PLAYER, 3_000)
    still_open = app.open_session("buy-3", PLAYER, 4_000).session_id
    app.red_dog_bet("rd", still_open, 100)
    return {
        "app": app,
        "open_session": still_open,
        "sessions": [first, second, still_open],
        "voided": [early.code, late.code],
        "won": {"early": early, "late": late},
        "voids": {"early": void_early, "late": void_late},
    }


def rebuilt(store: Store) -> dict[str, int]:
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings
    return report.balances


def test_statement_running_balances_equal_the_live_and_the_rebuilt_balances(
    store: Store, played: dict[str, Any]
) -> None:
    app: Casino = played["app"]
    lines = statements(app).lines(PLAYER)
    assert KINDS | {"withdrawal"} <= {ln.kind for ln in lines}
    last = lines[-1]
    account = f"account:{account_id_for(PLAYER)}"
    session = f"session:{played['open_session']}"
    live_session = app.get_session(played["open_session"]).balance
    balances = rebuilt(store)
    assert last.account_balance == app.account_balance(PLAYER) == balances[account]
    assert last.balance == app.account_balance(PLAYER) + live_session
    assert last.balance == balances[account] + balances[session]
    assert last.session_balance == live_session == balances[session]


def test_every_line_moves_its_balances_by_its_amount(played: dict[str, Any]) -> None:
    lines = statements(played["app"]).lines(PLAYER)
    account, sessions = 0, {}
    for ln in lines:
        if ln.ledger == "account":
            account += ln.amount
            if ln.kind == "buy-in":
                sessions[ln.session_id] = -ln.amount
            elif ln.kind == "session-return":
                sessions[ln.session_id] -= ln.amount
        else:
            sessions[ln.session_id] += ln.amount
            assert ln.session_balance == sessions[ln.session_id]
        assert ln.account_balance == account
        assert ln.balance == account + sum(sessions.values())
        if ln.kind in ("stake", "win", "refund", "reversal"):
            assert ln.round_code, ln
    voided = [ln for ln in lines if ln.kind in ("refund", "reversal")]
    # One void refunded into the open session, the other (after the close) into the account.
    assert {ln.round_code for ln in voided} == set(played["voided"])
    assert {ln.ledger for ln in voided} == {"session", "account"}


@pytest.fixture
def client(played: dict[str, Any]) -> Any:
    creds = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test")
    with TestClient(create_app(played["app"], credentials=creds)) as c:
        yield c


def test_http_statement_pages_by_cursor_and_ends_on_the_live_balance(
    client: Any, played: dict[str, Any]
) -> None:
    auth = {"Authorization": f"Bearer {OPERATOR}"}
    pages, after = [], 0
    while True:
        got = client.get(f"/v1/accounts/{PLAYER}/statement?after={after}&limit=4", headers=auth)
        assert got.status_code == 200, got.text
        doc = got.json()
        assert len(doc["lines"]) <= 4
        pages.extend(doc["lines"])
        if doc["next_after"] is None:
            break
        after = doc["next_after"]
    expected = [ln.to_dict() for ln in statements(played["app"]).lines(PLAYER)]
    assert pages == expected and len(pages) > 8
    balance = client.get(f"/v1/accounts/{PLAYER}", headers=auth).json()["balance"]
    assert pages[-1]["account_balance"] == balance


def test_http_statement_refuses_an_unknown_player_and_other_credentials(client: Any) -> None:
    auth = {"Authorization": f"Bearer {OPERATOR}"}
    missing = client.get("/v1/accounts/nobody/statement", headers=auth)
    assert missing.status_code == 404 and missing.json()["code"] == "account-not-found"
    auditor = {"Authorization": f"Bearer {AUDITOR}"}
    assert client.get(f"/v1/accounts/{PLAYER}/statement", headers=auditor).status_code == 403


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = audit_cli(list(args))
    return code, out.getvalue()


def test_audit_cli_statement_matches_the_application_and_filters_by_date(
    store: Store, played: dict[str, Any]
) -> None:
    code, text = _cli("statement", PLAYER, "--db", store.db, "--json")
    assert code == 0
    from_log = json.loads(text)
    assert from_log == [ln.to_dict() for ln in statements(played["app"]).lines(PLAYER)]
    assert from_log[-1]["account_balance"] == played["app"].account_balance(PLAYER)

    code, text = _cli("statement", PLAYER, "--db", store.db, "--csv")
    rows = text.strip().splitlines()
    assert code == 0 and rows[0].startswith("seq,time,kind,") and len(rows) == len(from_log) + 1

    today = datetime.now(UTC).date()
    for start, end, count in (
        (str(today), str(today), len(from_log)),
        (str(today + timedelta(days=1)), None, 0),
        (None, str(today - timedelta(days=1)), 0),
    ):
        args = ["statement", PLAYER, "--db", store.db, "--json"]
        args += ["--from", start] if start else []
        args += ["--to", end] if end else []
        code, text = _cli(*args)
        assert code == 0 and len(json.loads(text)) == count, (start, end)


def test_audit_cli_statement_refuses_a_malformed_date(store: Store, played: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        _cli("statement", PLAYER, "--db", store.db, "--from", "1st of May")
    assert exit_.value.code == 2


# -- voids in every history: the totals add up to the balance change --------------------


def player_money(app: Casino, open_session: str) -> int:
    return app.account_balance(PLAYER) + app.get_session(open_session).balance


def banked(app: Casino) -> int:
    """Deposits less withdrawals: what the player's money would be without any round."""
    return sum(
        ln.amount for ln in statements(app).lines(PLAYER) if ln.kind in ("deposit", "withdrawal")
    )


def test_a_void_result_says_what_it_refunded_reversed_and_where_it_landed(
    played: dict[str, Any],
) -> None:
    app: Casino = played["app"]
    won, voids = played["won"], played["voids"]
    lines = statements(app).lines(PLAYER)
    for name, landed_on in (("early", "session"), ("late", "account")):
        v = voids[name]
        assert v.refunded == won[name].staked > 0 and not v.already_voided
        assert v.reversed_win == won[name].payout > 0
        assert v.landed_on == landed_on
        # The balance it landed on is the one the statement shows after the reversal.
        [reversal] = [ln for ln in lines if ln.kind == "reversal" and ln.round_code == v.code]
        assert reversal.ledger == landed_on
        landed = reversal.session_balance if landed_on == "session" else reversal.account_balance
        assert v.landed_balance == landed
    again = app.void_round("void-again", won["late"].code, "display fault", "INC-2b")
    assert again.already_voided and again.landed_on == "account"
    assert (again.refunded, again.reversed_win) == (
        voids["late"].refunded,
        voids["late"].reversed_win,
    )


def test_every_history_shows_the_voids_and_its_totals_add_up_to_the_balance_change(
    store: Store, client: Any, played: dict[str, Any]
) -> None:
    app: Casino = played["app"]
    change = player_money(app, played["open_session"]) - banked(app)
    won = played["won"]

    live = app.history.account_history(PLAYER)
    rebuilt = player_history(store.db, PLAYER)
    auth = {"Authorization": f"Bearer {OPERATOR}"}
    over_http = client.get(f"/v1/accounts/{PLAYER}/history", headers=auth).json()
    code, text = _cli("history", PLAYER, "--db", store.db, "--json")
    from_cli = json.loads(text)
    assert code == 0

    for rows in (live, rebuilt, over_http["games"], from_cli):
        assert sum(r["net"] for r in rows) == change, rows
        by_code = {r["code"]: r for r in rows}
        for name, landed_on in (("early", "session"), ("late", "account")):
            r = by_code[won[name].code]
            assert (r["status"], r["outcome"], r["landed_on"]) == ("voided", "voided", landed_on)
            assert (r["stakes"], r["wins"]) == (won[name].staked, 0)
            assert (r["refunded"], r["reversed_win"]) == (won[name].staked, won[name].payout)
            assert r["net"] == 0
        for r in rows:
            assert r["net"] == r["wins"] - r["stakes"] + r["refunded"]
    totals = over_http["totals"]
    assert totals["net"] == change
    assert totals["refunded"] == sum(won[n].staked for n in won)
    assert totals["reversed_win"] == sum(won[n].payout for n in won)
    _, table = _cli("history", PLAYER, "--db", store.db)
    [total_line] = [ln for ln in table.splitlines() if ln.lstrip("│ ").startswith("total ")]
    cells = [c.strip() for c in total_line.split("│")[1:-1]]
    assert cells[3:8] == [
        str(totals[k]) for k in ("stakes", "wins", "refunded", "reversed_win")
    ] + [str(change)]


def test_each_sessions_history_adds_up_to_what_it_returned_or_holds(
    client: Any, played: dict[str, Any]
) -> None:
    app: Casino = played["app"]
    creds = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test")
    lines = statements(app).lines(PLAYER)
    for sid in played["sessions"]:
        buy_in = next(-ln.amount for ln in lines if ln.kind == "buy-in" and ln.session_id == sid)
        returned = [
            ln.amount for ln in lines if ln.kind == "session-return" and ln.session_id == sid
        ]
        now = returned[0] if returned else app.get_session(sid).balance
        rows = app.history.last_games(sid, 1000)
        # A void after the close moved the account, not the session: the session kept
        # that round's stakes and credited win (refund and reversal went to the account).
        in_session = sum(
            r["reversed_win"] - r["stakes"] if r["landed_on"] == "account" else r["net"]
            for r in rows
        )
        assert buy_in + in_session == now, sid
        recent = client.get(
            f"/v1/sessions/{sid}/history",
            headers={"Authorization": f"Bearer {creds.session_token(sid)}"},
        )
        assert recent.status_code == 200, recent.text
        doc = recent.json()
        assert doc["games"] == [as_http(r) for r in rows[:10]]
        assert doc["totals"]["net"] == sum(r["net"] for r in rows[:10])


def as_http(row: dict[str, Any]) -> dict[str, Any]:
    """A history row as HTTP shows it (the summary's fields)."""
    from api.schemas import GameSummary

    return GameSummary.model_validate(row).model_dump()


def test_a_void_over_http_carries_its_refund_and_the_balance_it_landed_on(
    client: Any, played: dict[str, Any]
) -> None:
    app: Casino = played["app"]
    sid = played["open_session"]
    rnd = app.open_round(sid)
    assert rnd is not None
    before = app.get_session(sid).balance
    auth = {"Authorization": f"Bearer {OPERATOR}", "Idempotency-Key": "http-void"}
    got = client.post(
        f"/v1/rounds/{rnd.code}/void", json={"reason": "fault", "incident_id": "I-9"}, headers=auth
    )
    assert got.status_code == 200, got.text
    doc = got.json()
    assert (doc["refunded"], doc["reversed_win"], doc["landed_on"]) == (rnd.staked, 0, "session")
    assert doc["landed_balance"] == before + rnd.staked == app.get_session(sid).balance
    change = player_money(app, sid) - banked(app)
    rows = app.history.account_history(PLAYER)
    assert sum(r["net"] for r in rows) == change


def _croupier(*args: str) -> tuple[int, str]:
    from api.cli import main as croupier

    out = io.StringIO()
    with redirect_stdout(out):
        code = croupier(list(args))
    return code, out.getvalue()


def test_croupier_void_prints_the_refund_the_reversal_and_the_balance_it_landed_on(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.settings import Settings

    monkeypatch.setenv("CROUPIER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CROUPIER_DATABASE_URL", raising=False)
    app = bootstrap(Settings(data_dir=tmp_path), seed_source=CountingSeeds())
    try:
        app.open_account("open", PLAYER, "EUR")
        app.deposit("dep", PLAYER, 50_000)
        sid = app.open_session("buy", PLAYER, 20_000).session_id
        won = win_a_round(app, sid, "w")
        app.close_session("close", sid)
        account = app.account_balance(PLAYER)
    finally:
        app.close()

    args = ["void", won.code, "--reason", "display fault", "--incident", "INC-3"]
    # audit-cli only reads: it names the operator's tool and changes nothing.
    err = io.StringIO()
    with redirect_stderr(err):
        assert _cli(*args)[0] == 2
    assert "croupier void" in err.getvalue()
    code, text = _croupier(*args, "--json")  # not already voided: the refusal changed nothing
    doc = json.loads(text)
    assert code == 0 and not doc["already_voided"]
    assert (doc["refunded"], doc["reversed_win"]) == (won.staked, won.payout)
    assert doc["landed_on"] == "account"
    assert doc["landed_balance"] == account + won.staked - won.payout

    code, text = _croupier(*args, "--request-id", "again")
    assert code == 0
    assert (
        text.split()
        == (
            f"round {won.code} was already voided: refunded {won.staked}, reversed win"
            f" {won.payout}, account balance now {doc['landed_balance']}, seed {doc['seed']}"
        ).split()
    )


def test_a_players_statement_opens_no_event_once_the_view_is_up_to_date(
    played: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statement is read from its view (issue 25): once the view has caught up, a
    page opens no event of the log at all (before: each query re-read and opened the
    player's events), and its lines are the lines of a book fed every event of the log."""
    from ledger.checkpoints import feed_opened
    from ledger.statement import StatementBook

    app: Casino = played["app"]
    app.open_account("open-other", "otto", "EUR")
    app.deposit("dep-other", "otto", 9_000)
    other = app.open_session("buy-other", "otto", 5_000).session_id
    win_a_round(app, other, "o")
    everyone = StatementBook()
    feed_opened(app, 0, everyone.feed_payload)
    app.readside.catch_up()
    opened: list[str] = []
    real_open = app.mapper.open  # type: ignore[attr-defined]

    def counting_open(note: Any) -> Any:
        opened.append(str(note.originator_id))
        return real_open(note)

    monkeypatch.setattr(app.mapper, "open", counting_open)
    lines = statements(app).lines(PLAYER)
    assert lines == everyone.lines(PLAYER) and lines
    assert statements(app).lines("otto") == everyone.lines("otto")
    assert opened == []
