"""Fail fast, fail named (issue 29): ``croupier serve --cells`` over two PostgreSQL servers,
one of them stopped under load.

Its players are answered ``503 storage-unavailable`` with ``Retry-After`` within 2 s (no
request hangs on the store's retries); the other cell keeps its 1 s checkpoints (each
cell has its own sealer); ``/health`` names the stopped cell with its error and the age of
its newest checkpoint. After the server is back, play resumes in both cells, the server
stops cleanly and ``audit-cli verify --cells`` passes with every key pinned.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from audit_cli.main import main as audit_cli
from cells import cellmap, index
from tests import pg_cluster
from tests.conftest import PG_URL, require_postgres
from tests.integration.test_cells import two_players
from tests.integration.test_http_e2e import AUDITOR, CREDENTIALS, OPERATOR, bearer
from tests.integration.test_http_serve import launch

pytestmark = pytest.mark.postgres


class Client:
    def __init__(self, base: str) -> None:
        self.base = base
        self.n = 0

    def post(self, path: str, token: str, body: Any = None) -> httpx.Response:
        self.n += 1
        headers = {**bearer(token), "Idempotency-Key": f"outage-{self.n}"}
        return httpx.post(self.base + path, json=body, headers=headers, timeout=30)

    def ok(self, path: str, token: str, body: Any = None) -> Any:
        r = self.post(path, token, body)
        assert r.status_code in (200, 201), (path, r.status_code, r.text)
        return r.json()

    def player(self, name: str) -> tuple[str, str]:
        self.ok("/v1/accounts", OPERATOR, {"player_id": name, "currency": "EUR"})
        self.ok(f"/v1/accounts/{name}/deposits", OPERATOR, {"amount": 100_000})
        doc = self.ok("/v1/sessions", OPERATOR, {"player_id": name, "buy_in": 50_000})
        return doc["session_id"], doc["token"]

    def round(self, sid: str, token: str) -> httpx.Response:
        r = self.post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
        if r.status_code == 200 and r.json()["status"] == "open":
            r = self.post(f"/v1/sessions/{sid}/red-dog/see", token)
        return r

    def health(self) -> Any:
        return httpx.get(self.base + "/health", timeout=5).json()


@pytest.fixture
def second_server() -> Iterator[pg_cluster.Cluster]:
    require_postgres()
    why = pg_cluster.available()
    if why is not None:
        pytest.fail(f"a second PostgreSQL server is needed: {why}")
    cluster = pg_cluster.Cluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.mark.requirement("GLI-19-FAILURE")
def test_a_stopped_store_fails_fast_and_named_and_the_other_cell_keeps_sealing(
    tmp_path: Path, second_server: pg_cluster.Cluster
) -> None:
    schema = "t_" + uuid.uuid4().hex[:12]
    urls = {"c0": PG_URL, "c1": second_server.url}
    for url in urls.values():
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    path = tmp_path / "cells.json"
    cells_doc = [{"name": n, "database_url": f"{u}?schema={schema}"} for n, u in urls.items()]
    path.write_text(json.dumps({"cells": cells_doc}))
    env = {f"CROUPIER_{k.upper()}": v for k, v in CREDENTIALS.items()}
    env["CROUPIER_CHECKPOINT_INTERVAL_SECONDS"] = "1"
    base, _, proc = launch(tmp_path, "--cells", str(path), **env)
    http = Client(base)
    try:
        a, b = two_players(cellmap.load(path))  # a in c0 (first server), b in c1 (second)
        (sid_a, tok_a), (sid_b, tok_b) = http.player(a), http.player(b)
        for sid, tok in ((sid_a, tok_a), (sid_b, tok_b)):
            assert http.round(sid, tok).status_code == 200

        second_server.stop()

        # b's requests: 503 storage-unavailable with Retry-After, each within 2 s.
        for attempt in range(4):
            started = time.monotonic()
            r = http.post(f"/v1/sessions/{sid_b}/red-dog/bet", tok_b, {"bet": 100})
            elapsed = time.monotonic() - started
            assert r.status_code == 503, (attempt, r.status_code, r.text)
            assert r.json()["code"] == "storage-unavailable" and r.headers["retry-after"]
            assert elapsed < 2.0, (attempt, elapsed)
        started = time.monotonic()
        r = httpx.get(f"{base}/v1/accounts/{b}", headers=bearer(OPERATOR), timeout=30)
        assert r.status_code == 503 and time.monotonic() - started < 2.0, r.text

        # a plays on while c0's sealer keeps its 1 s checkpoints.
        stop = threading.Event()
        played: list[int] = []

        def play() -> None:
            while not stop.is_set():
                played.append(http.round(sid_a, tok_a).status_code)

        player = threading.Thread(target=play)
        player.start()
        ages: list[float] = []
        seqs: set[int] = set()
        try:
            while not played:  # an idle log gets no checkpoints: sample while a plays
                time.sleep(0.05)
            time.sleep(1.5)
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                h = http.health()
                ages.append(h["cells"]["c0"]["last_checkpoint_age_seconds"])
                heads = httpx.get(f"{base}/v1/cells", headers=bearer(OPERATOR), timeout=5).json()
                seqs.add(next(x["seq"] for x in heads["cells"] if x["cell"] == "c0"))
                time.sleep(0.25)
        finally:
            stop.set()
            player.join()
        assert played and set(played) == {200}, played
        assert max(ages) < 3.0, ages  # 1 s ticks; before each cell had its own: 11.7 s
        assert len(seqs) >= 4, seqs

        # /health names the stopped cell, with its error and its checkpoint's age.
        h = http.health()
        assert h["status"] == "degraded" and h["failing"] == ["c1"], h
        c1 = h["cells"]["c1"]
        assert c1["status"] == "failing" and c1["error"] and c1["last_checkpoint_age_seconds"] > 2
        assert h["cells"]["c0"]["status"] == "ok" and "error" not in h["cells"]["c0"]

        second_server.start()
        deadline = time.monotonic() + 30
        while http.health()["status"] != "ok":
            assert time.monotonic() < deadline, http.health()
            time.sleep(0.2)
        for sid, tok in ((sid_b, tok_b), (sid_a, tok_a)):
            r = http.round(sid, tok)
            assert r.status_code == 200, r.text
        pins = {x["cell"]: x["genesis"] for x in heads["cells"]}
        signed = httpx.get(f"{base}/v1/cells/index", headers=bearer(AUDITOR), timeout=5).json()
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert "Application shutdown complete" in out, out

    doc = json.loads(path.read_text())
    for entry in doc["cells"]:
        entry["pin"] = pins[entry["name"]]
    doc["index_pin"] = index.fingerprint(bytes.fromhex(signed["public_key"]))
    path.write_text(json.dumps(doc))
    assert audit_cli(["verify", "--cells", str(path), "--jobs", "1"]) == 0
    for url in urls.values():
        if url == PG_URL:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
