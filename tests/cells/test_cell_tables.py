"""Live tables in cells (issue 28 item 6), in process: two cells on two SQLite files behind
the router, each cell's runners ticked on a fake clock.

A table is created in the cell its id is placed in (the raw rows of each cell's store
say so), the catalogue lists every cell's tables whoever asks, each table plays a round
in its own cell (bets, a decision, settlement by that cell's runner) and each cell
verifies; a session of the other cell is refused with ``table-in-other-cell`` on REST,
the stream and the WebSocket, and no row of either cell changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from api.auth import load_credentials
from api.table_runners import TableRunners
from audit_cli.rows import read_rows
from audit_cli.verify import verify_db
from cells import cellmap
from cells.cellmap import CellMap
from cells.deployment import Cells
from cells.router import CellRouter
from ledger import contracts
from ledger.keys import Keyring
from ledger.settings import Settings
from ledger.tables.aggregates import table_id_for
from tests.integration.table_helpers import CONFIG, FakeClock, a_seed_that_stops_at_a_step
from tests.integration.test_cells import Deployment, two_players
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer

SEAT = "/v1/sessions/{sid}/tables/{table}"


class Tables(Deployment):
    """The deployment with a fake clock and each cell's runners ticked by hand."""

    def __init__(self, path: Path, cells: Cells, client: TestClient, clock: FakeClock) -> None:
        super().__init__(path, cells, client)
        self.clock = clock
        self.runners = {name: TableRunners(app, clock) for name, app in cells.apps.items()}

    def tick(self, ms: int = 0) -> None:
        self.clock.advance(ms)
        for runners in self.runners.values():
            runners.tick()

    def create(self, table: str) -> str:
        """Create the table without naming a cell: the cell that answered."""
        body = {"table": table, "currency": "EUR", "config": CONFIG}
        r = self.client.post(
            "/v1/tables", json=body, headers={**bearer(OPERATOR), "Idempotency-Key": table}
        )
        assert r.status_code == 201, r.text
        return str(r.headers["x-croupier-cell"])

    def state(self, sid: str, token: str, table: str) -> Any:
        r = self.client.get(SEAT.format(sid=sid, table=table), headers=bearer(token))
        assert r.status_code == 200, r.text
        return r.json()

    def rows(self, cell: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in read_rows(self.map.cell(cell).db)]


def tables_in(m: CellMap) -> dict[str, str]:
    """A table id placed in each cell: cell -> table."""
    names = [f"bj-{i}" for i in range(50)]
    return {c: next(t for t in names if m.cell_for(t).name == c) for c in m.names}


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[Tables]:
    path = tmp_path / "cells.json"
    path.write_text(json.dumps({"cells": [{"name": "c0"}, {"name": "c1"}]}))
    settings = Settings(data_dir=tmp_path, **CREDENTIALS)  # type: ignore[arg-type]
    keyrings = {"c0": Keyring.generate(), "c1": Keyring.generate()}
    clock = FakeClock()
    seed = a_seed_that_stops_at_a_step(CONFIG)  # every shoe: a step to decide, no blackjack
    cells = Cells(
        cellmap.load(path), settings, keyrings=keyrings, clock=clock, seed_source=lambda: seed
    )
    router = CellRouter(cells, settings, load_credentials(settings))
    try:
        with TestClient(router) as client:
            yield Tables(path, cells, client, clock)
    finally:
        router.stop_tables()
        cells.close()


def test_a_table_lives_in_its_cell_is_listed_everywhere_and_plays_a_round_there(
    tables: Tables,
) -> None:
    placed = tables_in(tables.map)
    for cell, table in placed.items():
        assert tables.create(table) == cell
    # The raw rows: each table's events are in its own cell's store only.
    for cell, table in placed.items():
        ids = {str(table_id_for(t)) for t in placed.values()}
        mine = {r[1] for r in tables.rows(cell) if r[1] in ids}
        assert mine == {str(table_id_for(table))}, (cell, table)

    players = dict(zip(tables.map.names, two_players(tables.map), strict=True))
    seats = {cell: tables.player(name) for cell, name in players.items()}
    # The catalogue lists every cell's tables, whoever asks (the operator, either session).
    for token in (OPERATOR, *(tok for _, tok in seats.values())):
        listed = tables.client.get("/v1/tables", headers=bearer(token)).json()["tables"]
        assert [t["table"] for t in listed] == sorted(placed.values())
        games = tables.client.get("/v1/games", headers=bearer(token)).json()
        assert {t["table"] for t in games["other_games"]["blackjack"]["tables"]} == set(
            placed.values()
        )
        for cell, table in placed.items():  # a table's row, from the cell it is in
            r = tables.client.get(f"/v1/tables/{table}", headers=bearer(token))
            assert r.status_code == 200 and r.json()["table"] == table, r.text
            if token == OPERATOR:  # routed to the table's cell, which the header names
                assert r.headers["x-croupier-cell"] == cell

    tables.tick()  # each cell's runner opens its table's first round
    for cell, (sid, token) in seats.items():
        seat = SEAT.format(sid=sid, table=placed[cell])
        r = tables.post(f"{seat}/bets", token, {"bet": "main", "amount": 1_000})
        assert r["bets"] == {"main": 1_000}
    tables.tick(CONFIG["betting_ms"])  # the deal: the seed stops at the first step
    for cell, (sid, token) in seats.items():
        state = tables.state(sid, token, placed[cell])
        assert state["round"]["phase"] == "step" and state["round"]["step"] == 1, state
        seat = SEAT.format(sid=sid, table=placed[cell])
        r = tables.post(f"{seat}/decide", token, {"step": 1, "decision": "stand"})
        assert r["applied"] == "stand" and r["automatic"] is False, r
    for _ in range(10):  # the step closes (everyone decided), the dealer plays, settlement
        tables.tick(CONFIG["step_ms"])
    for cell, (sid, token) in seats.items():
        previous = tables.state(sid, token, placed[cell])["previous"]
        assert previous is not None and previous["phase"] == "settled", previous
        # Settled by the runner of its own cell: the seat's settlement is in that store.
        settled = [r for r in tables.rows(cell) if r[3] == contracts.SEAT_SETTLED]
        assert len(settled) == 1, cell
    for pinned in cellmap.load(tables.auditor_map()).cells:  # each genesis key pinned
        report = verify_db(pinned.db, {}, pin=pinned.pin, jobs=1)
        assert report.ok and report.trust == "pinned", (pinned.name, report.findings)


def test_a_session_of_the_other_cell_is_refused_typed_and_nothing_changes(
    tables: Tables,
) -> None:
    placed = tables_in(tables.map)
    for table in placed.values():
        tables.create(table)
    a, b = two_players(tables.map)  # a in c0, b in c1
    (_, tok_a), (sid_b, tok_b) = tables.player(a), tables.player(b)
    tables.tick()  # rounds open: the betting windows are open
    table = placed["c0"]  # b's session (cell c1) at a table of cell c0
    before = {cell: tables.rows(cell) for cell in tables.map.names}

    def refused(r: Any) -> None:
        assert r.status_code == 403, r.text
        body = r.json()
        assert body["code"] == "table-in-other-cell", body
        assert (body["table"], body["cell"], body["session_cell"]) == (table, "c0", "c1")
        assert "in another cell (c0) than this session (c1)" in body["message"], body

    seat = SEAT.format(sid=sid_b, table=table)
    refused(tables.client.get(seat, headers=bearer(tok_b)))
    for action, body in (
        ("join", None),
        ("bets", {"bet": "main", "amount": 1_000}),
        ("decide", {"step": 1, "decision": "stand"}),
        ("leave", None),
        ("chat", {"text": "hello"}),
    ):
        headers = {**bearer(tok_b), "Idempotency-Key": f"other-{action}"}
        refused(tables.client.post(f"{seat}/{action}", json=body, headers=headers))
    # Named with its own cell's prefix: still the table of the other cell.
    headers = {**bearer(tok_b), "Idempotency-Key": "prefixed"}
    r = tables.client.post(
        f"/cells/c1{seat}/bets", json={"bet": "main", "amount": 1_000}, headers=headers
    )
    refused(r)
    # The stream, with the header and with an EventSource's access_token.
    refused(tables.client.get(f"/v1/tables/{table}/stream", headers=bearer(tok_b)))
    refused(tables.client.get(f"/v1/tables/{table}/stream?access_token={tok_b}"))
    # The WebSocket: the handshake's denial carries the same answer.
    for url, headers in (
        (f"/v1/tables/{table}/ws", bearer(tok_b)),
        (f"/v1/tables/{table}/ws?access_token={tok_b}", {}),
    ):
        with (
            pytest.raises(WebSocketDenialResponse) as denied,
            tables.client.websocket_connect(url, headers=headers),
        ):
            pass
        refused(denied.value)
    # The operator cannot create a table in a cell its id is not placed in.
    headers = {**bearer(OPERATOR), "Idempotency-Key": "misplaced"}
    body = {"table": "bj-new", "currency": "EUR"}
    wrong = "c1" if tables.map.cell_for("bj-new").name == "c0" else "c0"
    r = tables.client.post(f"/cells/{wrong}/v1/tables", json=body, headers=headers)
    assert r.status_code == 403 and r.json()["code"] == "table-in-other-cell", r.text
    assert r.json()["cell"] == tables.map.cell_for("bj-new").name
    assert {cell: tables.rows(cell) for cell in tables.map.names} == before

    # Its own cell's table, and a's at this one, are served (the socket through the router).
    r = tables.client.get(SEAT.format(sid=sid_b, table=placed["c1"]), headers=bearer(tok_b))
    assert r.status_code == 200 and r.headers["x-croupier-cell"] == "c1", r.text
    with tables.client.websocket_connect(f"/v1/tables/{table}/ws", headers=bearer(tok_a)) as ws:
        first = [json.loads(x)["type"] for x in ws.receive_text().split("\n")]
        assert "round-opened" in first, first  # the table's messages, from its cell
        ws.send_text(json.dumps({"id": "m1", "command": "bet", "bet": "main", "amount": 500}))
        while True:
            lines = [json.loads(x) for x in ws.receive_text().split("\n")]
            answer = next((m for m in lines if m.get("ref") == "m1"), None)
            if answer is not None:
                break
    assert answer["type"] == "answer" and answer["result"]["bets"] == {"main": 500}, answer
