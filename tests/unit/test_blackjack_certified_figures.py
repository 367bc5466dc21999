"""``GET /v1/games`` and ``audit-cli rtp --theoretical`` take Infinite Blackjack's figures
from the shipped ``certified_figures.json``: no maths at request time (computing them took
seconds, and the first ``/v1/games`` after ``croupier serve`` could time out)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any, NoReturn

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.main import main as audit_main
from games.blackjack import cashout_math, certified, certify
from games.percent import as_percent
from ledger.bootstrap import bootstrap
from tests.conftest import Store
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer


def _no_maths(*_: object) -> NoReturn:
    raise AssertionError("certified figures were computed at request time")


FAKE = ("main, ten-up all-bets", "optimal, hit hard 17+")
"""The row the fake file changes (unpublished, so no finding): its RTP becomes 1/2."""


_READ_FILE = certified.shipped


def _fake_document() -> dict[str, Any]:
    doc = _READ_FILE()
    for row in doc["rows"]:
        if (row["paytable_id"], row["play"]) == FAKE:
            row["rtp"] = "1/2"
    return doc


@pytest.fixture
def maths_forbidden(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The certification and the cash-out derivation raise, and the file read is a fake
    whose one row differs from the maths; the per-process cache is emptied before and
    after, so the rows are read afresh here and not leaked."""
    monkeypatch.setattr(certify, "certification_rows", _no_maths)
    monkeypatch.setattr(certify, "certification", _no_maths)
    monkeypatch.setattr(cashout_math, "published_table", _no_maths)
    monkeypatch.setattr(certified, "shipped", _fake_document)
    certified.certified_rows.cache_clear()
    yield
    certified.certified_rows.cache_clear()


def _shipped_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = _fake_document()["rows"]
    return rows


@pytest.mark.usefixtures("maths_forbidden")
def test_the_catalogue_blackjack_entry_is_read_from_the_shipped_file(
    sqlite_store: Store,
) -> None:
    casino = bootstrap(sqlite_store.settings(**CREDENTIALS), sqlite_store.keyring)
    sqlite_store.apps.append(casino)
    with TestClient(create_app(casino)) as client:
        response = client.get("/v1/games", headers=bearer(OPERATOR))
    assert response.status_code == 200
    entry = response.json()["other_games"]["blackjack"]
    expected = [
        {
            "bet": r["paytable_id"],
            "play": r["play"],
            "percent": str(as_percent(certified._fraction(str(r["rtp"])))),
            "exact": r["rtp"] if r["exact"] else None,
            "published": r["published"],
            "agreement": r["agreement"],
        }
        for r in _shipped_rows()
    ]
    assert entry["rtp"] == expected and len(expected) == 14
    assert {(r["bet"], r["play"]): r for r in entry["rtp"]}[FAKE]["percent"] == "50.0000"
    assert entry["cashout_table"]["id"] == "cashout-v1"


@pytest.mark.usefixtures("maths_forbidden")
def test_the_theoretical_table_blackjack_rows_are_read_from_the_shipped_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = audit_main(["rtp", "--theoretical", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"]
    rows = [r for r in doc["rows"] if r["game"] == "blackjack"]
    shipped = _shipped_rows()
    assert [(r["paytable_id"], r["play"]) for r in rows] == [
        (r["paytable_id"], r["play"]) for r in shipped
    ]
    assert {(r["paytable_id"], r["play"]): r for r in rows}[FAKE]["rtp"] == "50.0000"
    for row, source in zip(rows, shipped, strict=True):
        assert row["rtp_exact"] == (source["rtp"] if source["exact"] else None)
        assert row["rtp"] == str(as_percent(certified._fraction(str(source["rtp"]))))
        assert (row["published"], row["agreement"]) == (source["published"], source["agreement"])


def test_the_shipped_file_keeps_fractions_exact_as_numerator_over_denominator() -> None:
    rows = certified.shipped()["rows"]
    assert len(rows) == 14
    for r in rows:
        for field in ("rtp", "max_paid_per_bet", "hit_frequency"):
            value = r[field]
            if value is not None:
                numerator, denominator = str(value).split("/")
                assert int(denominator) > 0 and int(numerator) >= 0, (field, value)


def test_regenerating_with_an_unknown_argument_is_refused_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = resources.files("games.blackjack").joinpath(certified.DATA_FILE)
    before = path.read_bytes()
    assert certified.main(["--wirte"]) == 2
    assert "usage" in capsys.readouterr().err
    assert path.read_bytes() == before
