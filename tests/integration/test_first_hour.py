"""The defects a newcomer met in the first hour (issue 23), each a rule that now holds:
cross-origin browsers are served only when configured, no credential reaches a log line,
the API docs work offline, the small API mismatches, ``audit-cli`` reading the server's
settings and telling "not found" from "mismatch", ``rtp`` on one multi-hand round, the
table state's server time, the viewer for blackjack rounds, the demo's paused table and
the default table on PostgreSQL."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from api.logs import REDACTED, Redact
from api.logs import config as log_config
from api.table_runners import DEFAULT_TABLE, ensure_default_table
from audit_cli.main import main as audit_cli
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from ledger.tables import views as queries
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.helpers import open_session
from tests.integration.table_helpers import Live

OPERATOR = "first-hour-operator-token-0123456789"
AUDITOR = "first-hour-auditor-token-0123456789"
ORIGIN = "https://games.example"


def creds() -> Credentials:
    return Credentials(OPERATOR, AUDITOR, b"f" * 32, "test", "test")


def client_for(store: Store, **settings: Any) -> TestClient:
    app = store.open()
    return TestClient(create_app(app, store.settings(**settings), credentials=creds()))


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with client_for(store) as c:
        yield c


def op() -> dict[str, str]:
    return {"Authorization": f"Bearer {OPERATOR}"}


def session(c: TestClient, player: str = "ann") -> tuple[str, dict[str, str]]:
    sid = open_session(c.app.state.casino, player)  # type: ignore[attr-defined]
    token = c.app.state.credentials.session_token(sid)  # type: ignore[attr-defined]
    return sid, {"Authorization": f"Bearer {token}"}


# -- CORS -------------------------------------------------------------------------------


PREFLIGHT = {
    "Origin": ORIGIN,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
}


def test_a_configured_origin_gets_the_cors_headers_and_its_preflight_answered(
    store: Store,
) -> None:
    with client_for(store, cors_allowed_origins=[ORIGIN]) as c:
        pre = c.options("/v1/accounts", headers=PREFLIGHT)
        assert pre.status_code == 200
        assert pre.headers["access-control-allow-origin"] == ORIGIN
        assert "idempotency-key" in pre.headers["access-control-allow-headers"].lower()
        refused = c.get("/v1/accounts/ann", headers={"Origin": ORIGIN})
        assert refused.status_code == 401  # the page can read why: the headers are there
        assert refused.headers["access-control-allow-origin"] == ORIGIN
        other = c.get("/health", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_no_origin_is_allowed_by_default(client: TestClient) -> None:
    pre = client.options("/v1/accounts", headers=PREFLIGHT)
    assert "access-control-allow-origin" not in pre.headers
    assert (
        "access-control-allow-origin"
        not in client.get("/health", headers={"Origin": ORIGIN}).headers
    )


# -- secrets in logs --------------------------------------------------------------------


def access_line(target: str) -> str:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", target, "1.1", 200),
        None,
    )
    Redact().filter(record)
    return record.getMessage()


def test_the_access_log_never_shows_a_session_token_or_a_link_signature() -> None:
    token = "3f2a0c1e-aaaa-bbbb-cccc-0123456789ab.1893456000.c2VjcmV0LW1hYw"
    line = access_line(f"/v1/tables/ibj-1/stream?access_token={token}&last_event_id=7")
    assert token not in line and f"access_token={REDACTED}" in line and "last_event_id=7" in line
    line = access_line("/rounds/RD-20261202-1?expires=1893456000&sig=QUJDREVGRw")
    assert "QUJDREVGRw" not in line and f"sig={REDACTED}" in line and "expires=1893456000" in line


def test_the_servers_log_config_redacts_uvicorns_access_log(tmp_path: Path) -> None:
    """``croupier serve`` hands uvicorn this config (api/cli.py): every handler redacts."""
    conf = log_config(Settings(data_dir=tmp_path))
    assert "uvicorn.access" in conf["loggers"]
    assert all("redact" in h["filters"] for h in conf["handlers"].values())


# -- API docs offline -------------------------------------------------------------------


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_api_docs_load_nothing_from_another_host(client: TestClient, page: str) -> None:
    html = client.get(page).text
    sources = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    sources += re.findall(r"""(?:url|spec-url): ?['"]([^'"]+)['"]""", html)
    assert sources, html
    assert not [s for s in sources if "//" in s], sources
    for s in sources:
        assert client.get(s).status_code == 200, s
    assert "fonts.googleapis" not in html and "cdn." not in html


# -- small API mismatches ---------------------------------------------------------------


def test_a_draw_with_no_body_draws_the_proposed_holds(client: TestClient) -> None:
    sid, me = session(client)
    key = {"Idempotency-Key": "deal"}
    dealt = client.post(
        f"/v1/sessions/{sid}/video-poker/deal",
        json={"variant": "jb-4line", "coin_value": 10, "coins": 1},
        headers={**me, **key},
    )
    assert dealt.status_code == 200, dealt.text
    drawn = client.post(
        f"/v1/sessions/{sid}/video-poker/draw", headers={**me, "Idempotency-Key": "draw"}
    )
    assert drawn.status_code == 200, drawn.text
    assert len(drawn.json()["view"]["lines"]) == 4


def test_the_table_state_carries_the_servers_time(client: TestClient) -> None:
    app = client.app.state.casino  # type: ignore[attr-defined]
    ensure_default_table(app)
    sid, me = session(client)
    before = datetime.now(UTC)
    state = client.get(f"/v1/sessions/{sid}/tables/{DEFAULT_TABLE}", headers=me).json()
    at = datetime.fromisoformat(state["server_time"])
    assert before.replace(microsecond=0) <= at <= datetime.now(UTC)


# -- the default table ------------------------------------------------------------------


def test_the_first_start_creates_a_table_on_either_store(store: Store) -> None:
    app = store.open()
    assert ensure_default_table(app) == DEFAULT_TABLE
    assert [t.table for t in queries.tables(app)] == [DEFAULT_TABLE]


# -- audit-cli --------------------------------------------------------------------------


def run_audit(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = audit_cli(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_audit_cli_reads_the_servers_store_from_the_same_settings(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    app = sqlite_store.open()
    open_session(app, "zed")
    app.close()
    monkeypatch.chdir(tmp_path)  # no ./data here: only the settings can lead to the store
    monkeypatch.setenv("CROUPIER_DATA_DIR", str(sqlite_store.settings().data_dir))
    code, out, err = run_audit("statement", "zed", "--json")
    assert code == 0, err
    assert [line["kind"] for line in json.loads(out)][:2] == ["deposit", "buy-in"]


def test_a_code_that_is_not_in_the_store_is_not_found_not_a_mismatch(store: Store) -> None:
    app = store.open()
    open_session(app)
    for code in ("RD-20990101-000000-ZZZZ", "IBJ-20990101-000000-ZZZZZZ"):
        status, out, err = run_audit("round", code, "--db", store.db)
        assert status == 1
        assert "NOT FOUND" in err and "MISMATCH" not in out + err
        status, out, _ = run_audit("round", code, "--db", store.db, "--json")
        assert json.loads(out)["status"] == "not-found"


def test_rtp_after_one_multi_hand_round_prints_and_its_json_is_strict(store: Store) -> None:
    app = store.open()
    sid = open_session(app)
    dealt = app.vp_deal("d", sid, "jb-multi", 10, 5, 3)
    mine = [0] if dealt.view["recommended"] != [0] else [1]  # not the proposal: no known play
    done = app.vp_act("draw", sid, ["draw", mine])
    if done.status == "open":
        app.vp_act("collect", sid, ["collect"])
    status, out, err = run_audit("rtp", "--db", store.db)
    assert status == 0 and "Traceback" not in err, err
    assert "n/a" in out
    status, out, err = run_audit("rtp", "--db", store.db, "--json")
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert doc["groups"][0]["measures"][0]["ci"] is None


# -- blackjack rounds: the viewer's link and check, rtp's panel, the demo's table ------


def a_settled_table_round(store: Store) -> tuple[Live, str]:
    live = Live(store)
    live.tick()
    sid = live.player("ann")
    code = str(live.bet(sid, "main", 1_000).code)
    for _ in range(30):
        live.tick(10_000)
        if queries.find_round(live.app, code).closed:
            break
    live.app.seal()
    return live, code


def test_the_viewer_link_and_check_answer_for_a_blackjack_round(store: Store) -> None:
    live, code = a_settled_table_round(store)
    with TestClient(create_app(live.app, credentials=creds())) as c:
        link = c.get(f"/v1/rounds/{code}/link", headers=op())
        assert link.status_code == 200, link.text
        page = c.get(link.json()["url"])
        assert page.status_code == 200 and "round.js" in page.text
        data = c.get(link.json()["url"].replace("?", "/data?", 1)).json()
        assert data["game"] == "blackjack" and data["table"]["seat_list"]
        assert data["commitment"] and data["inclusion"]["events"]
        check = c.get(f"/v1/rounds/{code}/check", headers=op()).json()
        assert check["ok"] and check["signatures_checked"], check["problems"]
        missing = c.get("/v1/rounds/IBJ-20990101-000000-ZZZZZZ/link", headers=op())
        assert missing.status_code == 404


def test_rtp_plot_has_a_blackjack_panel(store: Store, tmp_path: Path) -> None:
    a_settled_table_round(store)
    png = tmp_path / "rtp.png"
    status, out, err = run_audit("rtp", "--db", store.db, "--plot", str(png))
    assert status == 0, err
    assert "plot of 1 panel(s) written" in out
    assert png.read_bytes().startswith(b"\x89PNG")


def test_audit_cli_prints_blackjack_cards_as_every_other_game(store: Store) -> None:
    _, code = a_settled_table_round(store)
    status, out, err = run_audit("round", code, "--db", store.db, "--wide")
    assert status == 0, err
    assert re.search(r"[2-9TJQKA]?[0-9]?[♠♥♦♣]", out), out
    assert not re.search(r'"[2-9TJQKA]10?[shdc]"', out), out


def test_the_demo_leaves_its_table_paused(sqlite_store: Store) -> None:
    from api import table_demo
    from tests.integration.table_helpers import FakeClock

    clock = FakeClock()
    app = bootstrap(sqlite_store.settings(), sqlite_store.keyring, clock=clock)
    sqlite_store.apps.append(app)

    def sleep(seconds: float) -> None:
        clock.advance(int(seconds * 1000))

    table_demo.play(app, "t1", "demo", sleep=sleep, clock=clock)
    rnd = queries.current_round(app, queries.table(app, table_demo.DEMO_TABLE))
    assert rnd is not None and rnd.paused_at is not None and rnd.phase == "betting"
    before = app.recorder.max_notification_id()
    runner = TableRunner(app, table_demo.DEMO_TABLE, clock)
    for _ in range(20):  # what `croupier serve` would do with it: nothing
        runner.tick(clock.advance(60_000))
    assert app.recorder.max_notification_id() == before
