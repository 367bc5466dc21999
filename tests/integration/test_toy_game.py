"""A game added through the registry alone runs everywhere: ledger, HTTP, audit tools.

``tests/toy_high_card.py`` is a whole game in one module that imports nothing from
``ledger``, ``api`` or ``audit_cli``. Registering its one entry is all it takes: rounds
start, act and settle through the ledger's game-neutral commands and the HTTP routes,
``audit-cli round`` re-derives them, ``audit-cli rtp`` judges them against the game's own
exact figures, and ``GET /v1/games`` lists it. Without the entry, none of that works.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.main import main as audit_cli
from audit_cli.rounds import check_round
from audit_cli.rtp import rtp_report
from games import registry
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.commands import Decide, StartRound
from ledger.errors import InvalidRequest
from tests.conftest import Store
from tests.helpers import ChosenSeeds, assert_refused
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.toy_high_card import ENTRY, GAME

TOY = Path(__file__).parent.parent / "toy_high_card.py"
SEEDS = [bytes([i]) * 32 for i in range(1, 200)]


@pytest.fixture
def toy() -> Iterator[None]:
    with registry.registered(ENTRY):
        yield


def open_app(store: Store) -> Casino:
    app = bootstrap(store.settings(**CREDENTIALS), store.keyring, seed_source=ChosenSeeds(*SEEDS))
    store.apps.append(app)
    return app


def test_the_toy_game_imports_nothing_from_ledger_api_or_audit_cli() -> None:
    tree = ast.parse(TOY.read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not {m for m in modules if m.split(".")[0] in ("ledger", "api", "audit_cli")}


def test_a_registered_toy_game_plays_through_the_ledger_and_the_audit_tools(
    toy: None, store: Store, open_session: Callable[..., str]
) -> None:
    app = open_app(store)
    sid = open_session(app, buy_in=500_000)
    codes = []
    for i in range(60):
        started = app.command(f"start-{i}", StartRound(sid, GAME, {"bet": 100}))
        assert started.status == "open" and started.view["dealer"] is None
        done = app.command(f"reveal-{i}", Decide(sid, GAME, ("reveal",)))
        assert done.status == "settled" and done.payout in (0, 100, 200)
        codes.append(done.code)
    assert codes[0].startswith("HC-")

    report = check_round(store.db, codes[0])
    assert report.ok and report.status == "settled", report.problems
    assert audit_cli(["round", codes[0], "--db", store.db, "--json"]) == 0

    rtp = rtp_report(store.db)
    assert rtp.ok, rtp.problems
    [group] = [g for g in rtp.groups if g.group.game == GAME]
    assert group.group.tally.rounds == 60 and group.measures[0].theoretical == 1
    assert audit_cli(["rtp", "--db", store.db, "--json"]) == 0


def test_a_registered_toy_game_plays_over_http_and_is_in_the_catalogue(
    toy: None, store: Store, open_session: Callable[..., str]
) -> None:
    casino = open_app(store)
    sid = open_session(casino, buy_in=500_000)
    with TestClient(create_app(casino)) as client:
        token = client.app.state.credentials.session_token(sid)  # type: ignore[attr-defined]
        headers = {**bearer(token), "Idempotency-Key": "s-1"}
        r = client.post(
            f"/v1/sessions/{sid}/games/{GAME}/start", json={"bet": 200}, headers=headers
        )
        assert r.status_code == 200, r.text
        assert r.json()["game"] == GAME and set(r.json()["view"]) == {"player", "dealer", "bet"}
        headers = {**bearer(token), "Idempotency-Key": "d-1"}
        body = {"decision": ["reveal"]}
        r = client.post(f"/v1/sessions/{sid}/games/{GAME}/decide", json=body, headers=headers)
        assert r.status_code == 200 and r.json()["status"] == "settled", r.text
        again = client.post(f"/v1/sessions/{sid}/games/{GAME}/decide", json=body, headers=headers)
        assert again.json() == r.json()
        games = client.get("/v1/games", headers=bearer(OPERATOR)).json()
        assert games["other_games"][GAME]["paytable_id"] == "high-card/1-1"


def test_without_its_registry_entry_the_toy_game_is_refused(
    store: Store, open_session: Callable[..., str]
) -> None:
    app = open_app(store)
    sid = open_session(app)
    err = assert_refused(
        store, InvalidRequest, app.command, "start", StartRound(sid, GAME, {"bet": 100})
    )
    assert GAME in err.message
    assert registry.entry(GAME) is None
    assert json.dumps(sorted(registry.GAMES)) == '["red-dog", "video-poker"]'


def test_a_game_with_its_own_commands_cannot_be_started_through_the_neutral_command(
    store: Store, open_session: Callable[..., str]
) -> None:
    # Red Dog's params include the table's limits: a player must not choose them.
    app = open_app(store)
    sid = open_session(app)
    rigged = {"bet": 100, "min_bet": 1, "max_bet": 10**9}
    err = assert_refused(
        store, InvalidRequest, app.command, "start", StartRound(sid, "red-dog", rigged)
    )
    assert "red-dog/bet" in err.message
