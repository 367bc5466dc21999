"""``audit-cli report`` (issue 29) on a log of three days and every game: Red Dog, Jacks or
Better 4-line and multi-hand, live Infinite Blackjack seats, seamless rounds at the
operator's wallet, a round voided open and one voided after it settled.

The report's figures are checked against totals this test computes its own way from the
raw rows (from the rounds' and seats' outcome events, not from the money movements the
report reads), against ``audit-cli verify --balances``' books (the house's balance is the
GGR), per UTC day and in the operator's zone (a round at 23:30 UTC is on the next day in
Rome), and per session (buy-in, final balance). CSV, JSON, HTML and the auditor endpoint
say the same.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api import table_demo
from api.app import create_app
from audit_cli.main import main as audit_cli
from audit_cli.report import build_report
from audit_cli.rows import read_rows
from audit_cli.verify import verify_db
from ledger import contracts, envelope
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.seamless.commands import OpenSeamlessSession
from ledger.settings import Settings
from tests.integration.table_helpers import FakeClock
from tests.integration.test_http_e2e import AUDITOR, CREDENTIALS, bearer
from tests.wallet_fakes import FAST_RETRY, wallet_over_http

DAYS = [datetime(2026, 11, 28, 9, 0, tzinfo=UTC) + timedelta(days=d) for d in range(3)]


def payload(state: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(state).payload)
    return doc


def play_a_day(app: Casino, clock: FakeClock, day: int) -> None:
    tag = f"d{day}"
    app.open_account(f"{tag}-open", f"p{day}", "EUR")
    app.deposit(f"{tag}-dep", f"p{day}", 50_000)
    sid = app.open_session(f"{tag}-sess", f"p{day}", 20_000).session_id
    voided_open = False
    for i in range(30):
        clock.advance(60_000)
        r = app.red_dog_bet(f"{tag}-rd-{i}", sid, 200)
        if r.status == "open":
            if not voided_open:  # a round voided while open: its stake comes back refunded
                app.void_round(f"{tag}-void-open", r.code, "malfunction", f"INC-{day}a")
                voided_open = True
                continue
            r = app.red_dog_see(f"{tag}-rd-see-{i}", sid)
        if voided_open and i >= 5:
            break
    for variant, lines in (("jb-4line", 4), ("jb-multi", 3)):
        clock.advance(60_000)
        deal = app.vp_deal(f"{tag}-vp-{variant}", sid, variant, 10, 2, lines)
        done = app.vp_act(f"{tag}-vp-draw-{variant}", sid, ["draw", deal.view["recommended"]])
        if done.status == "open":
            app.vp_act(f"{tag}-vp-collect-{variant}", sid, ["collect"])
    # A settled round voided afterwards: its stake refunded, its win reversed.
    clock.advance(60_000)
    settled = app.red_dog_bet(f"{tag}-rd-late", sid, 300)
    if settled.status == "open":
        settled = app.red_dog_see(f"{tag}-rd-late-see", sid)
    app.void_round(f"{tag}-void-settled", settled.code, "operator error", f"INC-{day}b")
    app.close_session(f"{tag}-close", sid)

    def sleep(seconds: float) -> None:
        clock.advance(int(seconds * 1000))

    table_demo.play(app, f"t{day}", f"bj{day}", sleep=sleep, clock=clock)
    # Seamless: a player of the operator's wallet.
    sea = app.command(f"{tag}-sea-open", OpenSeamlessSession("op", f"w{day}", "EUR"))
    for i in range(3):
        clock.advance(60_000)
        r = app.red_dog_bet(f"{tag}-sea-{i}", sea.session_id, 100)
        if r.status == "open":
            app.red_dog_see(f"{tag}-sea-see-{i}", sea.session_id)
    app.seamless.outbox.drain()
    app.close_session(f"{tag}-sea-close", sea.session_id)


def independent_totals(db: str) -> tuple[dict[str, int], Counter[tuple[str, str, str]]]:
    """Money from the rounds' and seats' own outcome events; rounds per (UTC day, game,
    status)."""
    totals = Counter({"stakes": 0, "wins": 0, "refunds": 0, "reversed": 0})
    per_day: Counter[tuple[str, str, str]] = Counter()
    game_of: dict[str, str] = {}
    settled: dict[str, tuple[str, str]] = {}  # round -> (day, game); a void takes it back
    for row in read_rows(db):
        doc = payload(row.state)
        day = str(doc.get("timestamp", {}).get("_data_", ""))[:10]
        if row.topic == contracts.ROUND_STARTED:
            game_of[row.originator_id] = doc["game"]
        elif row.topic == contracts.ROUND_SETTLED:
            totals["stakes"] += doc["staked"]
            totals["wins"] += doc["payout"]
            settled[row.originator_id] = (day, game_of[row.originator_id])
        elif row.topic == contracts.ROUND_VOIDED:
            totals["refunds"] += doc["refunded"]
            totals["reversed"] += doc["reversed_win"]
            if settled.pop(row.originator_id, None) is None:
                totals["stakes"] += doc["refunded"]  # voided open: staked, never settled
            per_day[(day, game_of[row.originator_id], "voided")] += 1
        elif row.topic == contracts.SEAT_SETTLED:
            totals["stakes"] += doc["result"]["staked"]
            totals["wins"] += doc["result"]["returned"]
            per_day[(day, "blackjack", "settled")] += 1
    for day, game in settled.values():
        per_day[(day, game, "settled")] += 1
    return dict(totals), per_day


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any, str]:
    (tmp_path / "wallet").mkdir()
    clock = FakeClock(DAYS[0])
    # Every event's own timestamp follows the fake clock (the library stamps each event).
    monkeypatch.setattr("eventsourcing.domain.datetime_now_with_tzinfo", clock)
    with wallet_over_http(tmp_path / "wallet") as wallet:
        for day in range(len(DAYS)):
            wallet.admin.set_player(f"w{day}", "EUR", 100_000)
        settings = Settings(data_dir=tmp_path / "data", **CREDENTIALS)  # type: ignore[arg-type]
        wallets = {"op": wallet.client}
        app = bootstrap(settings, clock=clock, wallets=wallets, wallet_retry=FAST_RETRY)
        try:
            for day, start in enumerate(DAYS):
                clock.now = start if day < 2 else start.replace(hour=23, minute=20)
                play_a_day(app, clock, day)
            app.seal()
            pin = "SHA256:" + app.key_history.genesis_fingerprint
            with TestClient(create_app(app)) as http:
                online = http.get(
                    "/v1/audit/report", params={"zone": "Europe/Rome"}, headers=bearer(AUDITOR)
                ).json()
        finally:
            app.close()
    return str(tmp_path / "data" / "casino.sqlite"), online, pin


@pytest.mark.requirement("GLI-19-REPORTS")
@pytest.mark.requirement("ADM-SESSION-REPORT")
def test_the_report_equals_totals_computed_independently_and_the_books(
    log: tuple[str, Any, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, online, pin = log
    report = build_report(db, "Europe/Rome")
    assert report.findings == []
    (total,) = report.totals
    expected, per_day = independent_totals(db)
    got = {k: getattr(total, k) for k in ("stakes", "wins", "refunds", "reversed")}
    assert got == expected
    assert total.open_rounds == 0 and total.voided == 2 * len(DAYS)
    # The books of `audit-cli verify --balances`: the house's balance is the GGR.
    verified = verify_db(db, jobs=1, pin=pin)
    assert verified.ok, verified.findings
    books = verified.balances
    assert total.ggr == books["house:EUR"] != 0
    utc = [d for d in report.days if d.zone == "UTC"]
    assert sum(d.ggr for d in utc) == total.ggr
    assert sum(d.ggr for d in report.days if d.zone == "Europe/Rome") == total.ggr
    # Rounds per UTC day and game, and each game is there: seamless rounds are Red Dog.
    counted = Counter()
    for d in utc:
        counted[(d.day, d.game, "settled")] += d.rounds
        counted[(d.day, d.game, "voided")] += d.voided
    assert +counted == +per_day
    assert {d.game for d in utc} == {"red-dog", "video-poker", "blackjack"}
    assert {d.variant for d in utc if d.game == "video-poker"} == {"jb-4line", "jb-multi"}
    # 23:20 UTC on the third day is the next day in Rome.
    assert max(d.day for d in utc) == "2026-11-30"
    assert max(d.day for d in report.days if d.zone == "Europe/Rome") == "2026-12-01"
    for d in utc:
        if d.rtp_observed is not None and d.rounds >= 2:
            assert d.rtp_low is not None and d.rtp_low <= d.rtp_observed <= (d.rtp_high or 0)
            assert d.rtp_certified is not None and 0.9 < d.rtp_certified < 1.0
    # Sessions, ADM-style: every closed session's final balance is buy-in - stakes + wins.
    closed = [s for s in report.sessions if s.closed_at is not None and not s.seamless]
    assert len(closed) >= len(DAYS) * 4
    for s in closed:
        assert s.final_balance is not None and s.rounds > 0
        assert s.final_balance == s.buy_in - s.stakes + s.wins + s.refunds - s.reversed
    assert sum(s.refunds for s in closed) == total.refunds > 0
    # The same report as CSV, JSON, HTML and online.
    assert audit_cli(["report", "--db", db, "--zone", "Europe/Rome", "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert as_json == report.to_dict() == online
    assert audit_cli(["report", "--db", db, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sum(int(r["ggr"]) for r in rows) == total.ggr
    page = tmp_path / "report.html"
    assert audit_cli(["report", "--db", db, "--html", str(page)]) == 0
    text = page.read_text()
    assert text.count("data:image/png;base64,") >= 2 and "Regulator report" in text
