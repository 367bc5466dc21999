"""In Debian's chromium (issue 23): a game page on another origin opens a table's stream
and reads the table state when the server allows that origin, and is refused without;
the round viewer draws a settled blackjack round of a finished shoe, every seat, the
shared and dealer cards per step, with its checks passing in the page.

Chromium is ``/usr/bin/chromium`` (scripts/test installs it; never a downloaded browser),
driven by playwright. Screenshots are kept in ``test-artifacts/`` (gitignored) and the
pytest tmp dir."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from api.app import create_app
from api.viewer import signed_link
from ledger.tables import views as queries
from tests.conftest import Store
from tests.integration.table_helpers import CONFIG, Live
from tests.integration.test_round_viewer import (
    SECRET,
    _checks_pass,
    _free_port,
    _open,
    credentials,
)

GAME_PORT = _free_port()
GAME_ORIGIN = f"http://localhost:{GAME_PORT}"  # another origin than the API's 127.0.0.1:port
# One deck, cut card at 25-30 %: the shoe is done (its seed revealed) after a few rounds.
SMALL_SHOE = {**CONFIG, "decks": 1, "penetration_permille": [250, 300]}
SEEDS = tuple(hashlib.sha256(b"cross-origin %d" % i).digest() for i in range(20))


@dataclass
class Played:
    live: Live
    sessions: dict[str, str]
    settled: str  # a round of the finished shoe


def play_until_the_shoe_is_done(live: Live, sessions: dict[str, str]) -> str:
    codes: list[str] = []
    for _ in range(12):
        live.tick()  # the runner opens the round
        for sid in sessions.values():
            code = live.bet(sid, "main", 1_000).code
        codes.append(code)
        for _ in range(30):  # every window to its deadline: the automatic actions decide
            live.tick(10_000)
            if queries.find_round(live.app, code).closed:
                break
        live.tick()
        if queries.shoes(live.app, "T1")[0]["seed"] is not None:
            return codes[0]
    raise AssertionError("the one-deck shoe was not done after 12 rounds")


@pytest.fixture
def played(sqlite_store: Store) -> Played:
    live = Live(sqlite_store, config=SMALL_SHOE, seeds=SEEDS)
    sessions = {name: live.player(name) for name in ("ann", "bob")}
    settled = play_until_the_shoe_is_done(live, sessions)
    live.app.seal()
    return Played(live, sessions, settled)


def serve(played: Played, origins: list[str]) -> Iterator[str]:
    app = played.live.app
    settings = played.live.store.settings(cors_allowed_origins=origins)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(app, settings, credentials=credentials()),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def with_cors(played: Played) -> Iterator[str]:
    yield from serve(played, [GAME_ORIGIN])


@pytest.fixture
def without_cors(played: Played) -> Iterator[str]:
    yield from serve(played, [])


GAME_PAGE = """<!doctype html><html><body data-done="">
<pre id="log"></pre>
<script>
const api = %(api)s, token = %(token)s, sid = %(sid)s;
const log = (x) => { document.getElementById("log").textContent += x + "\\n"; };
window.streamed = [];
const es = new EventSource(`${api}/v1/tables/T1/stream?access_token=${encodeURIComponent(token)}`);
es.addEventListener("round-opened", (e) => {
  window.streamed.push(JSON.parse(e.data).code);
  log("stream: round-opened " + JSON.parse(e.data).code);
  es.close();
  document.body.dataset.stream = "ok";
});
es.onerror = () => {
  if (window.streamed.length) return;
  es.close();
  document.body.dataset.stream = "refused";
  log("stream refused");
};
fetch(`${api}/v1/sessions/${sid}/tables/T1`, { headers: { Authorization: `Bearer ${token}` } })
  .then((r) => r.json())
  .then((state) => {
    window.state = state;
    document.body.dataset.state = "ok";
    log("state: " + state.table);
  })
  .catch((err) => { document.body.dataset.state = "refused"; log("state refused: " + err); });
</script></body></html>"""


@contextmanager
def game_site(html: str) -> Iterator[None]:
    """The game's own web server, on another origin than the API."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", GAME_PORT), Page)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        site.shutdown()
        site.server_close()


def open_game_page(browser: Any, api: str, played: Played, shot: Path) -> Any:
    sid = played.sessions["ann"]
    token = credentials().session_token(sid)
    html = GAME_PAGE % {"api": json.dumps(api), "token": json.dumps(token), "sid": json.dumps(sid)}
    page = browser.new_page()
    with game_site(html):
        page.goto(f"{GAME_ORIGIN}/play")
        page.wait_for_selector("body[data-stream][data-state]", timeout=30_000)
    page.screenshot(path=str(shot), full_page=True)
    artifacts = Path(__file__).resolve().parents[2] / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / shot.name).write_bytes(shot.read_bytes())
    print(f"screenshot: {shot} (and test-artifacts/{shot.name})")
    return page


def test_a_page_on_an_allowed_origin_opens_the_stream_and_reads_the_state(
    played: Played, with_cors: str, browser: Any, tmp_path: Path
) -> None:
    page = open_game_page(browser, with_cors, played, tmp_path / "cors-allowed.png")
    assert page.get_attribute("body", "data-stream") == "ok"
    assert page.get_attribute("body", "data-state") == "ok"
    current = queries.table(played.live.app, "T1")
    streamed = page.evaluate("window.streamed")
    assert streamed and streamed[0].startswith("IBJ-")
    assert page.evaluate("window.state.table") == "T1" and current is not None


def test_a_page_on_another_origin_is_refused_without_cors(
    played: Played, without_cors: str, browser: Any, tmp_path: Path
) -> None:
    page = open_game_page(browser, without_cors, played, tmp_path / "cors-refused.png")
    assert page.get_attribute("body", "data-stream") == "refused"
    assert page.get_attribute("body", "data-state") == "refused"
    assert page.evaluate("window.streamed") == []
    # the same requests from no browser are served: only the browser's CORS check refuses
    token = credentials().session_token(played.sessions["ann"])
    state = httpx.get(
        f"{without_cors}/v1/sessions/{played.sessions['ann']}/tables/T1",
        headers={"Authorization": f"Bearer {token}", "Origin": GAME_ORIGIN},
    )
    assert state.status_code == 200 and "access-control-allow-origin" not in state.headers


def test_the_viewer_draws_a_settled_blackjack_round_and_its_checks_pass(
    played: Played, with_cors: str, browser: Any, tmp_path: Path
) -> None:
    app = played.live.app
    detail = queries.round_detail(app, played.settled)
    assert detail["status"] == "settled" and detail["shoe_seed"] is not None
    url, _ = signed_link(SECRET, played.settled, 5)
    page = _open(browser, with_cors + url, tmp_path / "round-viewer-blackjack.png")
    _checks_pass(page)
    assert "revealed seed matches" in page.inner_text("#check-commitment")
    dealt = page.eval_on_selector_all(
        'section.step[data-step="dealt"] .card', "els => els.map(e => e.dataset.card)"
    )
    assert dealt == [*detail["player_cards"], detail["dealer_cards"][0]]
    dealer = page.eval_on_selector_all(
        'section.step[data-step="dealer-played"] .card', "els => els.map(e => e.dataset.card)"
    )
    if dealer:  # no dealer play when every hand was settled before (a dealer blackjack)
        assert dealer == detail["dealer_cards"]
    steps = page.eval_on_selector_all("section.step", "els => els.map(e => e.dataset.step)")
    assert steps[0] == "opened" and "settled" in steps and steps[-1] == "seats"
    closed = [p for p in detail["phases"] if p[0].startswith("step-")]
    assert steps.count("step-closed") == len(closed)
    seats = page.eval_on_selector_all(".seat", "els => els.map(e => e.dataset.seat)")
    assert sorted(seats) == sorted(s["player_id"] for s in detail["seat_list"])
    for seat in detail["seat_list"]:
        row = f'.seat[data-seat="{seat["player_id"]}"]'
        cards = page.eval_on_selector_all(f"{row} .card", "els => els.map(e => e.dataset.card)")
        assert cards == [c for h in seat["hands"] for c in h["cards"]]
    check = page.inner_text("#check-inclusion")
    assert "events are in checkpoint" in check
