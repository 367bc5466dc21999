"""Two cells on one PostgreSQL server (two schemas), behind one HTTP address.

Players are routed to their cell by the map's stable rule; they play in both cells; each
cell verifies alone and the two together with the signed index of their tree heads;
tampering in one cell is reported with that cell named; a forged or out-of-date index is
caught; a request for a session of the other cell is routed right, or refused clearly.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.auth import load_credentials
from audit_cli.cells import verify_cells
from audit_cli.main import main as audit_cli
from audit_cli.rows import read_rows
from audit_cli.verify import verify_db
from cells import cellmap, index
from cells.deployment import Cells
from cells.router import CellRouter
from ledger.keys import Keyring
from ledger.settings import Settings
from tests.conftest import PG_URL, require_postgres
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer

pytestmark = pytest.mark.postgres


class Deployment:
    def __init__(self, path: Path, cells: Cells, client: TestClient) -> None:
        self.path, self.cells, self.client = path, cells, client
        self.map = cells.map
        self._n = 0

    def post(self, path: str, token: str, body: Any = None, expect: int = 200, **h: str) -> Any:
        self._n += 1
        headers = {**bearer(token), "Idempotency-Key": f"k-{self._n}", **h}
        r = self.client.post(path, json=body, headers=headers)
        assert r.status_code == expect, (path, r.status_code, r.text)
        return r.json()

    def player(self, name: str) -> tuple[str, str]:
        """A funded player with an open session: (session id, session token)."""
        self.post("/v1/accounts", OPERATOR, {"player_id": name, "currency": "EUR"}, 201)
        self.post(f"/v1/accounts/{name}/deposits", OPERATOR, {"amount": 100_000})
        doc = self.post("/v1/sessions", OPERATOR, {"player_id": name, "buy_in": 20_000}, 201)
        return doc["session_id"], doc["token"]

    def auditor_map(self) -> Path:
        """The auditor's copy of the map: every cell's genesis key and the index key pinned."""
        doc = json.loads(self.path.read_text())
        for entry in doc["cells"]:
            app = self.cells.apps[entry["name"]]
            entry["pin"] = "SHA256:" + app.key_history.genesis_fingerprint
        signed = self.cells.last_index or self.cells.seal()
        doc["index_pin"] = index.fingerprint(bytes.fromhex(signed["public_key"]))
        out = self.path.with_name("auditor-cells.json")
        out.write_text(json.dumps(doc))
        return out


def two_players(m: cellmap.CellMap) -> tuple[str, str]:
    """A player of cell c0 and one of cell c1 (the first of each by the map's rule)."""
    names = [f"player-{i}" for i in range(50)]
    return (
        next(n for n in names if m.cell_for(n).name == "c0"),
        next(n for n in names if m.cell_for(n).name == "c1"),
    )


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    require_postgres()
    import psycopg

    schemas = ["t_" + uuid.uuid4().hex[:12] for _ in range(2)]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for s in schemas:
            conn.execute(f"CREATE SCHEMA {s}")
    path = tmp_path / "cells.json"
    cells_doc = [
        {"name": f"c{i}", "database_url": f"{PG_URL}?schema={s}"} for i, s in enumerate(schemas)
    ]
    path.write_text(json.dumps({"cells": cells_doc}))
    settings = Settings(data_dir=tmp_path, **CREDENTIALS)  # type: ignore[arg-type]
    keyrings = {"c0": Keyring.generate(), "c1": Keyring.generate()}
    cells = Cells(cellmap.load(path), settings, keyrings=keyrings)
    try:
        router = CellRouter(cells, settings, load_credentials(settings))
        with TestClient(router) as client:
            yield Deployment(path, cells, client)
    finally:
        cells.close()
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            for s in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")


def accounts_in(db: str) -> set[str]:
    """The player ids whose accounts a cell's raw log opens."""
    players = set()
    for row in read_rows(db):
        if row.topic.startswith("croupier/account/opened"):
            from ledger import envelope

            players.add(json.loads(envelope.decode(row.state).payload)["player_id"])
    return players


def play_red_dog(d: Deployment, sid: str, token: str, rounds: int = 3) -> None:
    for _ in range(rounds):
        r = d.post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
        if r["status"] == "open":
            d.post(f"/v1/sessions/{sid}/red-dog/see", token)


def test_a_players_cell_is_the_same_in_every_reading_of_the_map(deployment: Deployment) -> None:
    again = cellmap.load(deployment.path)
    names = [f"p{i}" for i in range(200)]
    first = [deployment.map.cell_for(n).name for n in names]
    assert first == [again.cell_for(n).name for n in names]
    assert 60 <= first.count("c0") <= 140  # both cells get players


def test_players_play_in_both_cells_and_each_account_lives_only_in_its_cell(
    deployment: Deployment,
) -> None:
    a, b = two_players(deployment.map)
    for name in (a, b):
        sid, token = deployment.player(name)
        cell = deployment.map.cell_for(name).name
        assert token.startswith(cell + "~")
        play_red_dog(deployment, sid, token)
        r = deployment.client.get(f"/v1/accounts/{name}", headers=bearer(OPERATOR))
        assert r.status_code == 200 and r.headers["x-croupier-cell"] == cell
    assert accounts_in(deployment.map.cell("c0").db) == {a}
    assert accounts_in(deployment.map.cell("c1").db) == {b}


def test_each_cell_verifies_alone_and_the_cells_verify_together(deployment: Deployment) -> None:
    for name in two_players(deployment.map):
        sid, token = deployment.player(name)
        play_red_dog(deployment, sid, token)
    auditor_map = deployment.auditor_map()
    for cell in cellmap.load(auditor_map).cells:
        report = verify_db(cell.db, {}, pin=cell.pin, jobs=1)
        assert report.ok and report.trust == "pinned", (cell.name, report.findings)
    report = verify_cells(cellmap.load(auditor_map), jobs=1)
    assert report.ok and report.index_trust == "pinned", report.findings
    assert audit_cli(["verify", "--cells", str(auditor_map), "--jobs", "1", "--json"]) == 0


def test_tampering_in_one_cell_is_reported_with_that_cell_named(deployment: Deployment) -> None:
    a, b = two_players(deployment.map)
    for name in (a, b):
        sid, token = deployment.player(name)
        play_red_dog(deployment, sid, token)
    auditor_map = deployment.auditor_map()
    victim = deployment.map.cell("c1")
    import psycopg

    schema = victim.db.rsplit("schema=", 1)[1]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            f"UPDATE {schema}.casino_events SET topic = topic || 'x' WHERE notification_id = "
            f"(SELECT max(notification_id) FROM {schema}.casino_events "
            "WHERE topic LIKE 'croupier/account/opened%')"
        )
    report = verify_cells(cellmap.load(auditor_map), jobs=1)
    assert not report.ok
    assert {cell for cell, _ in report.findings} == {"c1"}
    assert audit_cli(["verify", "--cells", str(auditor_map), "--jobs", "1"]) == 1


def _checks(report: Any) -> set[tuple[str, str]]:
    return {(cell, f.check) for cell, f in report.findings}


def test_a_forged_index_is_caught(deployment: Deployment) -> None:
    sid, token = deployment.player(two_players(deployment.map)[0])
    play_red_dog(deployment, sid, token, 1)
    auditor_map = deployment.auditor_map()
    m = cellmap.load(auditor_map)
    doc = deployment.cells.seal()
    altered = json.loads(json.dumps(doc))
    altered["cells"][0]["root_hash"] = "00" * 32
    index.write(m.index_path, altered)
    assert _checks(verify_cells(m, jobs=1)) == {("*", "cells-index-signature")}
    # Re-signed by a key that is not the pinned one:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    forged = index.sign(Ed25519PrivateKey.generate(), altered["cells"], doc["time_ms"])
    index.write(m.index_path, forged)
    assert _checks(verify_cells(m, jobs=1)) == {
        ("*", "cells-index-pin"),
        (altered["cells"][0]["cell"], "cells-index-head"),
    }
    # An older head of a cell whose root was changed, re-signed: not a prefix of its log.
    older = json.loads(json.dumps(doc))
    older["cells"][1].update(tree_size=1, root_hash="11" * 32)
    index.write(m.index_path, index.sign(deployment.cells.index_key, older["cells"], 0))
    assert _checks(verify_cells(m, jobs=1)) == {(older["cells"][1]["cell"], "cells-index-head")}


def test_an_out_of_date_index_is_caught_naming_the_cell(deployment: Deployment) -> None:
    a, _b = two_players(deployment.map)
    sid, token = deployment.player(a)
    auditor_map = deployment.auditor_map()
    m = cellmap.load(auditor_map)
    old = deployment.cells.seal()
    play_red_dog(deployment, sid, token, 2)  # cell c0 moves on
    deployment.cells.seal()  # (every seal also covers each cell's previous checkpoint row)
    assert verify_cells(m, jobs=1).ok
    index.write(m.index_path, old)  # an earlier, genuinely signed index put back
    # Only c0 has events the old index does not cover (c1 only new checkpoint rows):
    assert _checks(verify_cells(m, jobs=1)) == {("c0", "cells-index-stale")}


def test_a_session_of_the_other_cell_is_routed_right_or_refused_clearly(
    deployment: Deployment,
) -> None:
    _a, b = two_players(deployment.map)
    sid_b, token_b = deployment.player(b)
    # Without a prefix the token's cell routes it:
    r = deployment.client.get(f"/v1/sessions/{sid_b}", headers=bearer(token_b))
    assert r.status_code == 200 and r.headers["x-croupier-cell"] == "c1"
    # Sent to the other cell explicitly, it is refused and names its cell:
    r = deployment.client.get(f"/cells/c0/v1/sessions/{sid_b}", headers=bearer(token_b))
    assert r.status_code == 403 and r.json()["code"] == "wrong-cell"
    assert r.json()["cell"] == "c1"
    # The token's prefix swapped for the other cell does not verify there:
    forged = "c0~" + token_b.split("~", 1)[1]
    r = deployment.client.get(f"/v1/sessions/{sid_b}", headers=bearer(forged))
    assert r.status_code == 401
    # The operator closes it without naming the cell: the cell holding it answers.
    before = [tuple(r) for r in read_rows(deployment.map.cell("c0").db)]
    doc = deployment.post(f"/v1/sessions/{sid_b}/close", OPERATOR)
    assert doc["session_id"] == sid_b
    assert [tuple(r) for r in read_rows(deployment.map.cell("c0").db)] == before


def test_audit_requests_need_their_cell_and_the_index_spans_them(deployment: Deployment) -> None:
    auditor = CREDENTIALS["auditor_token"]
    r = deployment.client.get("/v1/audit/checkpoints/latest", headers=bearer(auditor))
    assert r.status_code == 400 and r.json()["code"] == "cell-required"
    deployment.cells.seal()
    r = deployment.client.get("/cells/c1/v1/audit/checkpoints/latest", headers=bearer(auditor))
    assert r.status_code == 200
    doc = deployment.client.get("/v1/cells/index", headers=bearer(auditor)).json()
    assert {h["cell"] for h in doc["cells"]} == {"c0", "c1"}
    assert index.check_signature(doc).startswith("SHA256:")
