"""Small things a newcomer tripped on: currencies are ISO 4217 with their minor unit,
``jb-4line`` deals 4 lines by default, ``/v1/games`` says where Red Dog's optimal raise
stops being possible and which paytable ``jb-multi`` pays, and ``croupier demo`` run twice
plays two sessions."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from api.cli import main as croupier
from ledger.errors import InvalidRequest
from ledger.money import currencies, minor_unit
from ledger.statement import statements
from tests.conftest import Store
from tests.helpers import assert_refused, raw_rows

OPERATOR = "newcomer-operator-token-0123456789"
AUDITOR = "newcomer-auditor-token-0123456789"


@pytest.fixture
def client(store: Store) -> Any:
    app = store.open()
    creds = Credentials(OPERATOR, AUDITOR, b"n" * 32, "test", "test")
    with TestClient(create_app(app, credentials=creds)) as c:
        c.casino = app  # type: ignore[attr-defined]
        yield c


def test_currencies_are_iso_4217_with_their_minor_unit() -> None:
    known = currencies()
    assert (known["EUR"], known["JPY"], known["KWD"], known["XOF"]) == (2, 0, 3, 0)
    assert "XAU" not in known and "ABC" not in known  # gold has no minor unit
    assert minor_unit("USD") == 2


@pytest.mark.parametrize("currency", ["ABC", "XAU", "XXX", "eur"])
def test_an_account_in_a_code_that_is_no_iso_4217_currency_is_refused(
    store: Store, currency: str
) -> None:
    app = store.open()
    err = assert_refused(store, InvalidRequest, app.open_account, "o", "zoe", currency)
    assert repr(currency) in err.message and "ISO 4217" in err.message


def test_an_account_in_yen_opens(store: Store) -> None:
    app = store.open()
    assert app.open_account("o", "kenji", "JPY").currency == "JPY"


def test_currencies_endpoint_publishes_each_minor_unit(client: Any) -> None:
    got = client.get("/v1/currencies", headers={"Authorization": f"Bearer {AUDITOR}"})
    assert got.status_code == 200
    doc = got.json()
    table = {c["code"]: c["minor_unit"] for c in doc["currencies"]}
    assert table["EUR"] == 2 and table["JPY"] == 0 and table == currencies()
    assert "ISO 4217" in doc["source"]


def _session(client: Any) -> tuple[str, dict[str, str]]:
    app = client.casino
    app.open_account("o", "lena", "EUR")
    app.deposit("d", "lena", 100_000)
    sid = app.open_session("s", "lena", 50_000).session_id
    token = client.app.state.credentials.session_token(sid)
    return sid, {"Authorization": f"Bearer {token}"}


def test_a_jb_4line_deal_without_lines_plays_4_lines(client: Any) -> None:
    sid, auth = _session(client)
    dealt = client.post(
        f"/v1/sessions/{sid}/video-poker/deal",
        json={"variant": "jb-4line", "coin_value": 10, "coins": 1},
        headers={**auth, "Idempotency-Key": "deal-1"},
    )
    assert dealt.status_code == 200, dealt.text
    assert dealt.json()["stake"] == 10 * 1 * 4
    schema = client.get("/openapi.json").json()["components"]["schemas"]["VideoPokerDeal"]
    assert schema["properties"]["lines"]["default"] == 4


def test_a_jb_multi_deal_without_lines_is_refused_and_changes_nothing(
    client: Any, store: Store
) -> None:
    sid, auth = _session(client)
    before = raw_rows(store)
    refused = client.post(
        f"/v1/sessions/{sid}/video-poker/deal",
        json={"variant": "jb-multi", "coin_value": 10, "coins": 1},
        headers={**auth, "Idempotency-Key": "deal-2"},
    )
    body = refused.json()
    assert refused.status_code == 422 and body["code"] == "invalid-lines"
    assert "jb-multi needs lines" in body["message"] and "not offered" not in body["message"]
    assert raw_rows(store) == before


def test_games_say_where_the_optimal_red_dog_raise_ends_and_what_jb_multi_pays(
    client: Any,
) -> None:
    doc = client.get("/v1/games", headers={"Authorization": f"Bearer {AUDITOR}"}).json()
    [red_dog] = doc["red_dog"]
    half = red_dog["max_bet"] // 2
    assert any(f"over {half}" in n and "impossible" in n for n in red_dog["notes"])
    poker = {v["id"]: v for v in doc["video_poker"]}
    [note] = poker["jb-multi"]["notes"]
    assert "seed 000" in note and "9/6" in note and "coin columns" in note
    assert poker["jb-multi"]["paytable"] == poker["jb-4line"]["paytable"]


def _demo(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert croupier(["demo", *args]) == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def test_croupier_demo_run_twice_plays_a_second_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CROUPIER_DATABASE_URL", "POSTGRES_DBNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CROUPIER_DATA_DIR", str(tmp_path))
    first, second = _demo(), _demo()
    assert first["player"] == second["player"] == "demo"
    assert first["session"]["session_id"] != second["session"]["session_id"]
    assert {r["code"] for r in first["rounds"]}.isdisjoint(r["code"] for r in second["rounds"])
    # The same --tag replays that run instead.
    tagged = _demo("--tag", "again")
    assert _demo("--tag", "again")["session"] == tagged["session"]

    from ledger.bootstrap import bootstrap
    from ledger.settings import Settings

    app = bootstrap(Settings())
    try:
        buy_ins = [ln for ln in statements(app).lines("demo") if ln.kind == "buy-in"]
    finally:
        app.close()
    assert len(buy_ins) == 2
