"""The round viewer: who may open it, and what a real headless browser draws.

The browser half drives Debian's chromium (``/usr/bin/chromium``, installed by ``.ci/run``)
with playwright against ``croupier``'s app served by uvicorn: for a settled round of each
game it opens ``/rounds/{code}``, checks the cards drawn per step against the log, and that
the page's own checks (SHA-256 commitment, inclusion proofs, checkpoint signature) pass.
Screenshots are kept in ``test-artifacts/`` (gitignored) and the pytest tmp dir.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from api.viewer import link_mac, signed_link
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.results import RoundPlayed
from tests.conftest import Store

OPERATOR = "viewer-operator-token-0123456789abcdef"
AUDITOR = "viewer-auditor-token-0123456789abcdef"
SECRET = b"viewer-api-secret-0123456789abcdef0123"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class CountingSeeds:
    """Fake seed source: SHA-256 of a counter, so every run plays the same rounds."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> bytes:
        self.n += 1
        return hashlib.sha256(f"viewer-{self.n}".encode()).digest()


Played = tuple[Casino, dict[str, RoundPlayed]]


def play_rounds(app: Casino) -> dict[str, RoundPlayed]:
    """A settled Red Dog round with a raise, a 4-line round with double-up steps and a
    multi-hand round; returns the final result of each by name."""
    app.open_account("o", "vera", "EUR")
    app.deposit("d", "vera", 10_000_000)
    sid = app.open_session("s", "vera", 5_000_000).session_id
    found: dict[str, RoundPlayed] = {}
    for i in range(200):
        if "red-dog" not in found:
            r = app.red_dog_bet(f"rd{i}", sid, 1_000)
            if r.status == "open":
                r = app.red_dog_raise(f"rd{i}-raise", sid, r.view["max_raise"])
                found["red-dog"] = r
        if "jb-4line" not in found:
            r = app.vp_deal(f"jb{i}", sid, "jb-4line", 10, 5, 4)
            r = app.vp_act(f"jb{i}-draw", sid, ["draw", r.view["recommended"]])
            if r.status == "open":  # a win: double it, pick the first card
                r = app.vp_act(f"jb{i}-double", sid, ["double"])
                r = app.vp_act(f"jb{i}-pick", sid, ["pick", 0])
                if r.status == "open":
                    r = app.vp_act(f"jb{i}-collect", sid, ["collect"])
                found["jb-4line"] = r
        if len(found) == 2:
            break
    dealt = app.vp_deal("jbm", sid, "jb-multi", 10, 5, 3)
    multi = app.vp_act("jbm-draw", sid, ["draw", dealt.view["recommended"]])
    if multi.status == "open":  # a win is collected (jb-multi has no double-up)
        multi = app.vp_act("jbm-collect", sid, ["collect"])
    found["jb-multi"] = multi
    for name, r in found.items():
        assert r.status == "settled", (name, r)
    voided = app.red_dog_bet("rd-void", sid, 500)
    found["voided"] = app.void_round("void", voided.code, "display fault", "INC-9")
    app.seal()
    return found


@pytest.fixture
def played(sqlite_store: Store) -> Iterator[Played]:
    app = bootstrap(sqlite_store.settings(), sqlite_store.keyring, seed_source=CountingSeeds())
    sqlite_store.apps.append(app)
    yield app, play_rounds(app)


def credentials() -> Credentials:
    return Credentials(OPERATOR, AUDITOR, SECRET, "test", "test")


# -- who may open it --------------------------------------------------------------------


@pytest.fixture
def client(played: Played) -> Iterator[TestClient]:
    app, _ = played
    with TestClient(create_app(app, credentials=credentials())) as c:
        yield c


def test_the_page_needs_a_credential_or_a_signed_link(client: TestClient, played: Played) -> None:
    code = played[1]["red-dog"].code
    assert client.get(f"/rounds/{code}").status_code == 401
    for token in (OPERATOR, AUDITOR):
        ok = client.get(f"/rounds/{code}", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and "round.js" in ok.text
    url, _ = signed_link(SECRET, code, 5)
    assert client.get(url).status_code == 200
    assert client.get(url + "x").status_code == 403  # one character more in the MAC
    # A validly signed session token (for a session that need not exist here).
    creds = dataclasses.replace(client.app.state.credentials, opened_at=None)  # type: ignore[attr-defined]
    session = creds.session_token(str(uuid.uuid4()))
    as_player = client.get(f"/rounds/{code}", headers={"Authorization": f"Bearer {session}"})
    assert as_player.status_code == 403


def test_an_expired_or_forged_link_is_refused(client: TestClient, played: Played) -> None:
    code = played[1]["red-dog"].code
    other = played[1]["jb-4line"].code
    expired = int(time.time()) - 1
    old = client.get(f"/rounds/{code}?expires={expired}&sig={link_mac(SECRET, code, expired)}")
    assert old.status_code == 403 and old.json()["code"] == "link-invalid"
    later = int(time.time()) + 600
    # A link to one round opens no other round, and its expiry cannot be moved.
    elsewhere = client.get(f"/rounds/{other}?expires={later}&sig={link_mac(SECRET, code, later)}")
    assert elsewhere.status_code == 403
    forged = link_mac(b"another-secret-0123456789abcdef0123", code, later)
    assert client.get(f"/rounds/{code}?expires={later}&sig={forged}").status_code == 403
    moved = link_mac(SECRET, code, later)
    assert client.get(f"/rounds/{code}?expires={later + 60}&sig={moved}").status_code == 403


def test_the_operator_makes_links_and_nobody_else_does(client: TestClient, played: Played) -> None:
    code = played[1]["jb-multi"].code
    made = client.get(
        f"/v1/rounds/{code}/link?minutes=10", headers={"Authorization": f"Bearer {OPERATOR}"}
    )
    assert made.status_code == 200
    doc = made.json()
    assert 590 <= doc["expires"] - time.time() <= 600
    assert client.get(doc["url"]).status_code == 200
    path, query = doc["url"].split("?")
    data = client.get(f"{path}/data?{query}")
    assert data.status_code == 200 and data.json()["code"] == code
    refused = client.get(f"/v1/rounds/{code}/link", headers={"Authorization": f"Bearer {AUDITOR}"})
    assert refused.status_code == 403


def test_round_check_endpoint_reports_an_untouched_round_ok(
    client: TestClient, played: Played
) -> None:
    for r in played[1].values():
        got = client.get(
            f"/v1/rounds/{r.code}/check", headers={"Authorization": f"Bearer {AUDITOR}"}
        )
        assert got.status_code == 200
        doc = got.json()
        assert doc["ok"] and doc["signatures_checked"] and doc["rederived"], doc["problems"]


# -- in a real browser ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def served(played: Played) -> Iterator[str]:
    app, _ = played
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(app, credentials=credentials()),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, name="viewer-test-server", daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    assert httpx.get(f"{base}/health", timeout=5).status_code == 200
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _open(browser: Any, url: str, shot: Path) -> Any:
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # A failed load (the browser's own /favicon.ico included) is an error in the console.
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(url)
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    page.wait_for_load_state("networkidle")
    assert page.get_attribute("body", "data-ready") == "1", errors
    assert not errors, errors
    page.screenshot(path=str(shot), full_page=True)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / shot.name)
    return page


def _cards(page: Any, selector: str) -> list[str]:
    found = page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.card)")
    return [str(c) for c in found]


def _checks_pass(page: Any) -> None:
    for check in ("events", "commitment", "inclusion", "checkpoint"):
        li = page.locator(f"#check-{check}")
        assert li.get_attribute("class") == "ok", (check, li.inner_text())


def _settled_view(app: Casino, code: str) -> dict[str, Any]:
    return dict(app.find_round(code).view)


def test_the_browser_draws_a_voided_round_with_its_refund(
    played: Played, served: str, browser: Any, tmp_path: Path
) -> None:
    app, rounds = played
    code = rounds["voided"].code
    url, _ = signed_link(SECRET, code, 5)
    page = _open(browser, served + url, tmp_path / "round-viewer-voided.png")
    _checks_pass(page)
    voided = page.inner_text('section.step[data-step="voided"]')
    assert "display fault (incident INC-9)" in voided and "5.00 EUR" in voided
    assert _cards(page, 'section.step[data-step="started"] .card') == list(
        app.history.timeline(code)[0]["view"]["cards"]
    )


@pytest.mark.parametrize("game", ["red-dog", "jb-4line", "jb-multi"])
def test_the_browser_draws_every_step_of_a_settled_round_and_its_checks_pass(
    game: str, played: Played, served: str, browser: Any, tmp_path: Path
) -> None:
    app, rounds = played
    code = rounds[game].code
    url, _ = signed_link(SECRET, code, 5)
    page = _open(browser, served + url, tmp_path / f"round-viewer-{game}.png")
    _checks_pass(page)
    view = _settled_view(app, code)
    steps = page.eval_on_selector_all("section.step", "els => els.map(e => e.dataset.step)")
    timeline = app.history.timeline(code)
    assert steps == [s["step"] for s in timeline]
    times = page.eval_on_selector_all("section.step .time", "els => els.map(e => e.textContent)")
    assert all(times) and len(times) == len(timeline)
    settled = 'section.step[data-step="settled"]'
    if game == "red-dog":
        assert _cards(page, f"{settled} .card") == view["cards"]
        assert len(view["cards"]) == 3
        assert _cards(page, 'section.step[data-step="started"] .card') == view["cards"][:2]
        assert "raise" in page.inner_text('section.step[data-step="acted"]')
    else:
        lines = [ln["cards"] for ln in view["lines"]]
        dealt = _cards(page, 'section.step[data-step="started"] .card')
        assert dealt == view["dealt"]
        drawn = _cards(page, 'section.step[data-step="acted"]:nth-of-type(2) .card')
        assert drawn == [c for ln in lines for c in ln]
        assert len(lines) == (4 if game == "jb-4line" else 3)
    if game == "jb-4line":
        ups = view["double_up"]
        assert ups, "the 4-line round was meant to double up"
        shown = page.locator(f"{settled} .hand.double")
        assert shown.count() == len(ups)
        for i, d in enumerate(ups):
            assert (
                _cards(page, f"{settled} .hand.double >> nth={i} >> .card[data-card]")[0]
                == (d["dealer_card"])
            )
        payout = rounds[game].payout
        assert f"{payout // 100}.{payout % 100:02d} EUR" in page.inner_text(settled)
