"""``croupier serve --cells`` over two stores (two SQLite files; two PostgreSQL databases
made with ``createdb`` and dropped after), a live table in each cell (issue 28 item 6).

Through the router only, on the server's own clock: each table is created in the cell
its id is placed in (the raw rows of each cell's store), listed in the catalogue, and
plays rounds in its cell (a main bet, a decision, settled by that cell's runner, which
``serve --cells`` runs) until each seat has decided in a settled round. A player of the
other cell is refused with ``table-in-other-cell`` on REST, the stream and the WebSocket,
and no raw row of either cell changes. After the server stops, ``audit-cli verify``
passes on each cell with its genesis key pinned, and ``verify --cells`` on the two.

No fixed waits: every wait polls against a deadline (the runner's real clock sets the
pace), and the failure says what was awaited.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from audit_cli.main import main as audit_cli
from audit_cli.rows import read_rows
from cells import cellmap, index
from ledger import contracts
from ledger.tables.aggregates import table_id_for
from tests.cells.test_cell_tables import tables_in
from tests.conftest import PG_URL, require_postgres
from tests.integration.test_cells import two_players
from tests.integration.test_http_e2e import AUDITOR, CREDENTIALS, OPERATOR, bearer
from tests.integration.test_http_serve import launch

# Short real windows (the schema's floor is 1 s): a round lasts a few seconds.
FAST = {"betting_ms": 3_000, "insurance_ms": 1_500, "step_ms": 2_000, "grace_ms": 100}


@pytest.fixture(params=["sqlite", "postgres"])
def cells_file(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """The map of two cells: two SQLite files, or two new PostgreSQL databases."""
    path = tmp_path / "cells.json"
    if request.param == "sqlite":
        path.write_text(json.dumps({"cells": [{"name": "c0"}, {"name": "c1"}]}))
        yield path
        return
    require_postgres()
    url = urlparse(PG_URL)
    where = ["-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432)]
    where += ["-U", url.username or "postgres"]
    names = [f"croupier_cells_{uuid.uuid4().hex[:10]}_{i}" for i in range(2)]
    try:
        for name in names:
            subprocess.run(["createdb", *where, name], check=True, capture_output=True)
        base = f"{url.scheme}://{url.netloc}"
        cells = [{"name": f"c{i}", "database_url": f"{base}/{n}"} for i, n in enumerate(names)]
        path.write_text(json.dumps({"cells": cells}))
        yield path
    finally:
        for name in names:
            subprocess.run(["dropdb", *where, "--if-exists", "--force", name], check=True)


@dataclass
class Seat:
    """One player at the table of its own cell, and the rounds it has played there."""

    cell: str
    table: str
    sid: str
    token: str
    code: str | None = None
    """The round it has a main bet in, not yet settled."""
    decided: set[tuple[str, int]] = field(default_factory=set)
    finished: list[dict[str, Any]] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"/v1/sessions/{self.sid}/tables/{self.table}"

    @property
    def done(self) -> bool:
        """A settled round in which the seat decided itself (not the runner's timeout)."""
        return any(
            any(d["automatic"] is None for d in f["decisions"].values())
            for f in self.finished
            if f["phase"] == "settled"
        )


class Client:
    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30)

    def post(self, path: str, token: str, body: Any = None) -> httpx.Response:
        headers = {**bearer(token), "Idempotency-Key": uuid.uuid4().hex}
        return self.http.post(path, json=body or {}, headers=headers)

    def ok(self, path: str, token: str, body: Any = None) -> httpx.Response:
        r = self.post(path, token, body)
        assert r.status_code in (200, 201), (path, r.status_code, r.text)
        return r

    def player(self, name: str) -> tuple[str, str]:
        self.ok("/v1/accounts", OPERATOR, {"player_id": name, "currency": "EUR"})
        self.ok(f"/v1/accounts/{name}/deposits", OPERATOR, {"amount": 100_000})
        doc = self.ok("/v1/sessions", OPERATOR, {"player_id": name, "buy_in": 50_000}).json()
        return doc["session_id"], doc["token"]

    def state(self, seat: Seat) -> Any:
        r = self.http.get(seat.path, headers=bearer(seat.token))
        assert r.status_code == 200, r.text
        return r.json()


def closing(r: httpx.Response, *codes: str) -> bool:
    """True if ``r`` is a 409 with one of ``codes`` (a window closing under the request);
    anything else but a success fails the test."""
    if r.status_code == 409 and r.json().get("code") in codes:
        return True
    assert r.status_code == 200, r.text
    return False


def act(http: Client, seat: Seat, state: dict[str, Any]) -> None:
    """One look at the seat: a main bet in an open betting window, no insurance, and in
    each open step a stand (always an option)."""
    rnd = state["round"]
    if seat.code is None and rnd["phase"] == "betting":
        r = http.post(f"{seat.path}/bets", seat.token, {"bet": "main", "amount": 1_000})
        if not closing(r, "betting-closed"):
            seat.code = rnd["code"]
        return
    if seat.code != rnd["code"] or not state["options"]:
        return
    step = int(rnd["step"] or 0)
    code: str = rnd["code"]
    if (code, step) in seat.decided:
        return
    if rnd["phase"] == "insurance":
        r = http.post(f"{seat.path}/insurance", seat.token, {"take": False})
    else:
        r = http.post(f"{seat.path}/decide", seat.token, {"step": step, "decision": "stand"})
    if not closing(r, "step-closed", "already-decided"):
        seat.decided.add((code, step))


def play(http: Client, seats: list[Seat], within: float = 150) -> None:
    deadline = time.monotonic() + within
    while not all(s.done for s in seats):
        assert time.monotonic() < deadline, [(s.cell, s.finished, s.code) for s in seats]
        for seat in seats:
            if seat.done:
                continue
            state = http.state(seat)
            rnd = state["round"]
            if rnd is None:  # the runners have not found the new table yet
                continue
            if seat.code is not None and rnd["code"] != seat.code:
                previous = state["previous"]
                assert previous is not None and previous["code"] == seat.code, state
                assert previous["phase"] == "settled", previous
                seat.finished.append(previous)
                seat.code = None
            act(http, seat, state)
        time.sleep(0.05)  # the poll's pace


def rows(db: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in read_rows(db)]


def until_quiet(http: Client, dbs: list[str], within: float = 60) -> None:
    """Pause every table (the runners then write nothing) and wait until every cell's
    rows stand still over a few sealer intervals (its last checkpoint written)."""
    listed = http.http.get("/v1/tables", headers=bearer(OPERATOR)).json()["tables"]
    for t in listed:  # the default table too (serve creates it in its cell)
        http.ok(f"/v1/tables/{t['table']}/pause", OPERATOR, {"reason": "compare rows"})
    deadline = time.monotonic() + within
    last = [rows(db) for db in dbs]
    still = time.monotonic()
    while time.monotonic() - still < 3.5:  # CROUPIER_CHECKPOINT_INTERVAL_SECONDS=1
        assert time.monotonic() < deadline, "the cells' rows did not stand still"
        time.sleep(0.5)
        now = [rows(db) for db in dbs]
        if now != last:
            last, still = now, time.monotonic()


async def socket_refusal(url: str, token: str) -> tuple[int, dict[str, Any]]:
    with pytest.raises(InvalidStatus) as e:
        async with connect(url, additional_headers=bearer(token)):
            pass
    return e.value.response.status_code, json.loads(e.value.response.body or b"{}")


def test_serve_cells_plays_a_table_in_each_cell_and_refuses_the_other_cells_players(
    cells_file: Path, tmp_path: Path
) -> None:
    m = cellmap.load(cells_file)
    placed = tables_in(m)  # cell -> a table id placed there
    env = {f"CROUPIER_{k.upper()}": v for k, v in CREDENTIALS.items()}
    env["CROUPIER_CHECKPOINT_INTERVAL_SECONDS"] = "1"
    base, port, proc = launch(tmp_path, "--cells", str(cells_file), **env)  # type: ignore[arg-type]
    http = Client(base)
    try:
        for cell, table in placed.items():
            body = {"table": table, "currency": "EUR", "config": FAST}
            r = http.ok("/v1/tables", OPERATOR, body)
            assert r.headers["x-croupier-cell"] == cell, (table, r.headers)
        players = dict(zip(m.names, two_players(m), strict=True))
        seats = [Seat(c, placed[c], *http.player(name)) for c, name in players.items()]
        for token in (OPERATOR, *(s.token for s in seats)):
            listed = http.http.get("/v1/tables", headers=bearer(token)).json()["tables"]
            assert set(placed.values()) <= {t["table"] for t in listed}, listed

        play(http, seats)  # serve --cells runs each cell's runner: the rounds settle

        dbs = [m.cell(c).db for c in m.names]
        for cell, table in placed.items():
            for other, db in zip(m.names, dbs, strict=True):
                stored = {r[1] for r in rows(db)}
                assert (str(table_id_for(table)) in stored) == (other == cell), (table, other)
        for seat, db in zip(seats, dbs, strict=True):  # one player per cell
            settled = [r for r in rows(db) if r[3] == contracts.SEAT_SETTLED]
            assert len(settled) >= len(seat.finished) >= 1, seat.cell

        until_quiet(http, dbs)
        before = [rows(db) for db in dbs]
        for seat, theirs in ((seats[0], seats[1]), (seats[1], seats[0])):
            other = f"/v1/sessions/{seat.sid}/tables/{theirs.table}"
            answers = [
                http.http.get(other, headers=bearer(seat.token)),
                http.post(f"{other}/bets", seat.token, {"bet": "main", "amount": 1_000}),
                http.post(f"{other}/decide", seat.token, {"step": 1, "decision": "stand"}),
                http.http.get(f"/v1/tables/{theirs.table}/stream", headers=bearer(seat.token)),
            ]
            for r in answers:
                assert r.status_code == 403, r.text
                assert r.json()["code"] == "table-in-other-cell" and r.json()["cell"] == theirs.cell
            ws = f"ws://127.0.0.1:{port}/v1/tables/{theirs.table}/ws"
            status, doc = asyncio.run(socket_refusal(ws, seat.token))
            assert (status, doc["code"], doc["table"]) == (403, "table-in-other-cell", theirs.table)
        assert [rows(db) for db in dbs] == before

        heads = http.http.get("/v1/cells", headers=bearer(OPERATOR)).json()["cells"]
        signed = http.http.get("/v1/cells/index", headers=bearer(AUDITOR)).json()
    finally:
        http.http.close()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert "Application shutdown complete" in out, out

    pins = {h["cell"]: h["genesis"] for h in heads}
    for pinned in m.cells:
        args = ["verify", "--db", pinned.db, "--pin", pins[pinned.name], "--jobs", "1"]
        assert audit_cli(args) == 0, pinned.name
    doc = json.loads(cells_file.read_text())
    for entry in doc["cells"]:
        entry["pin"] = pins[entry["name"]]
    doc["index_pin"] = index.fingerprint(bytes.fromhex(signed["public_key"]))
    cells_file.write_text(json.dumps(doc))
    assert audit_cli(["verify", "--cells", str(cells_file), "--jobs", "1"]) == 0
