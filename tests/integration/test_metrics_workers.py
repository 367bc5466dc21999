"""``GET /metrics`` of a real ``croupier serve --workers 2`` on PostgreSQL, under load
(issue 29): every listed metric is there with sane values, added up over both workers.

Players play Red Dog in transfer and seamless sessions (the wallet simulator over HTTP),
a live table runs with a stream open on it, and unauthenticated requests are refused;
meanwhile /metrics is scraped. The money counters must equal, to the minor unit, what
the players' responses say was staked and won, which holds only if the scrape adds up
the worker processes' files (each worker counts only what it served).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from ledger.metrics import ALL
from tests.conftest import PG_URL, require_postgres
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.integration.test_http_serve import launch
from tests.wallet_fakes import KEY, wallet_over_http

pytestmark = pytest.mark.postgres
METRICS_TOKEN = "metrics-token-for-tests-0123456789"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")


def parse(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The samples of a Prometheus text exposition, by name."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out


def total(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **match: str) -> float:
    return sum(
        v
        for labels, v in samples.get(name, [])
        if all(labels.get(k) == x for k, x in match.items())
    )


class Load:
    def __init__(self, base: str) -> None:
        self.base = base
        self.lock = threading.Lock()
        self.n = 0
        self.staked = 0
        self.won = 0
        self.rounds = 0
        self.refused = 0
        self.codes: dict[str, str] = {}  # a round code of each session

    def post(self, path: str, token: str, body: Any = None) -> Any:
        with self.lock:
            self.n += 1
            key = f"load-{self.n}"
        r = httpx.post(
            self.base + path,
            json=body,
            headers={**bearer(token), "Idempotency-Key": key},
            timeout=60,
        )
        assert r.status_code in (200, 201), (path, r.status_code, r.text)
        return r.json()

    def transfer_session(self, player: str) -> tuple[str, str]:
        self.post("/v1/accounts", OPERATOR, {"player_id": player, "currency": "EUR"})
        self.post(f"/v1/accounts/{player}/deposits", OPERATOR, {"amount": 1_000_000})
        doc = self.post("/v1/sessions", OPERATOR, {"player_id": player, "buy_in": 500_000})
        return doc["session_id"], doc["token"]

    def seamless_session(self, player: str) -> tuple[str, str]:
        body = {"operator": "op", "player_token": player, "currency": "EUR"}
        doc = self.post("/v1/seamless/sessions", OPERATOR, body)
        return doc["session_id"], doc["token"]

    def play(self, sid: str, token: str, rounds: int) -> None:
        for _ in range(rounds):
            doc = self.post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": 100})
            if doc["status"] == "open":
                doc = self.post(f"/v1/sessions/{sid}/red-dog/see", token)
            with self.lock:
                self.rounds += 1
                self.staked += doc["staked"]
                self.won += doc["payout"]
                self.codes[sid] = doc["code"]

    def refuse(self, times: int) -> None:
        for _ in range(times):
            r = httpx.get(self.base + "/v1/games", headers=bearer("no-such-token"), timeout=30)
            assert r.status_code == 401
            with self.lock:
                self.refused += 1


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    yield name
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.mark.requirement("UKGC-RTS-SEC-A12-MON")
def test_metrics_of_two_workers_under_load_are_complete_and_add_up(
    tmp_path: Path, schema: str
) -> None:
    (tmp_path / "wallet").mkdir()
    multiproc = tmp_path / "metrics"
    with wallet_over_http(tmp_path / "wallet") as wallet:
        for player in ("sea-0", "sea-1"):
            wallet.admin.set_player(player, "EUR", 1_000_000)
        url = str(wallet.admin._http.base_url).rstrip("/")
        wallets = {"op": {"mode": "seamless", "base_url": url, "key": KEY.decode()}}
        env = {f"CROUPIER_{k.upper()}": v for k, v in CREDENTIALS.items()}
        env.update(
            CROUPIER_DATABASE_URL=f"{PG_URL}?schema={schema}",
            CROUPIER_METRICS_TOKEN=METRICS_TOKEN,
            CROUPIER_WALLETS=json.dumps(wallets),
            PROMETHEUS_MULTIPROC_DIR=str(multiproc),
            CROUPIER_STREAM_HEARTBEAT_SECONDS="0.5",  # the stream's reader checks its stop flag
        )
        base, _, proc = launch(tmp_path, "--workers", "2", **env)
        stop_stream = threading.Event()
        streamer: threading.Thread | None = None
        try:
            load = Load(base)
            load.post("/v1/tables", OPERATOR, {"table": "m1", "currency": "EUR"})
            sessions = [load.transfer_session(f"pl-{i}") for i in range(3)]
            sessions += [load.seamless_session(p) for p in ("sea-0", "sea-1")]
            # A stream open on the table while the load runs (SSE, the session's token).
            tok0 = sessions[0][1]
            stream_open = threading.Event()

            def follow() -> None:
                url = f"{base}/v1/tables/m1/stream"
                with httpx.stream("GET", url, headers=bearer(tok0), timeout=60) as r:
                    assert r.status_code == 200
                    stream_open.set()
                    for _ in r.iter_bytes():
                        if stop_stream.is_set():
                            return

            streamer = threading.Thread(target=follow, daemon=True)
            streamer.start()
            threads = [
                threading.Thread(target=load.play, args=(sid, tok, 15)) for sid, tok in sessions
            ]
            threads.append(threading.Thread(target=load.refuse, args=(5,)))
            for t in threads:
                t.start()
            scrapes = []
            while any(t.is_alive() for t in threads):
                scrapes.append(
                    httpx.get(f"{base}/metrics", headers=bearer(METRICS_TOKEN), timeout=30)
                )
                time.sleep(0.2)
            for t in threads:
                t.join()
            void = {"reason": "malfunction drill", "incident_id": "INC-1"}
            transfer_round = load.codes[sessions[1][0]]  # a seamless win cannot be reversed
            load.post(f"/v1/rounds/{transfer_round}/void", OPERATOR, void)
            assert stream_open.wait(30)
            time.sleep(2.5)  # every worker's sampler has ticked since the load
            final = httpx.get(f"{base}/metrics", headers=bearer(OPERATOR), timeout=30)
            auditor = httpx.get(f"{base}/metrics", headers=bearer(CREDENTIALS["auditor_token"]))
            anonymous = httpx.get(f"{base}/metrics")
        finally:
            stop_stream.set()
            if streamer is not None:
                streamer.join(timeout=30)
            proc.terminate()
            proc.communicate(timeout=60)

    assert all(r.status_code == 200 for r in scrapes) and len(scrapes) >= 2
    assert (auditor.status_code, anonymous.status_code) == (403, 401)
    assert final.headers["content-type"].startswith("text/plain")
    m = parse(final.text)
    # Every metric defined is exported (a histogram as its _count, a counter as _total).
    for metric in ALL:
        name = metric._name
        kind = metric._type
        exported = {"counter": f"{name}_total", "histogram": f"{name}_count"}.get(kind, name)
        assert exported in m, name
    # Both workers wrote metrics (each its own files), and the scrape added them up.
    pids = {f.stem.rsplit("_", 1)[-1] for f in multiproc.glob("counter_*.db")}
    assert len(pids) >= 2, pids
    assert total(m, "croupier_rounds_settled_total", game="red-dog", currency="EUR") == load.rounds
    assert total(m, "croupier_rounds_voided_total", game="red-dog", currency="EUR") == 1
    assert total(m, "croupier_staked_minor_total", game="red-dog") == load.staked
    assert total(m, "croupier_won_minor_total", game="red-dog") == load.won
    bets = total(m, "croupier_http_requests_total", route="/v1/sessions/{session_id}/red-dog/bet")
    assert bets == load.rounds
    assert total(m, "croupier_commands_total", command="red_dog_bet", outcome="ok") == load.rounds
    assert total(m, "croupier_command_duration_seconds_count", command="red_dog_bet") == load.rounds
    assert total(m, "croupier_limiter_refusals_total", code="unauthenticated") >= load.refused
    batches = total(m, "croupier_group_commit_batch_size_count")
    written = total(m, "croupier_group_commit_batch_size_sum")
    assert 0 < batches <= written  # every batch has at least one command
    latency = total(m, "croupier_http_request_duration_seconds_sum")
    assert 0 < latency < 60 * total(m, "croupier_http_request_duration_seconds_count")
    assert total(m, "croupier_wallet_calls_total", call="debit", outcome="ok") >= 30
    assert total(m, "croupier_checkpoints_total") >= 1
    assert total(m, "croupier_sealer_errors_total") == 0
    assert 0 <= total(m, "croupier_checkpoint_age_seconds") < 30
    assert 0 <= total(m, "croupier_sealer_lag_seconds") < 10
    assert total(m, "croupier_store_failing") == 0
    assert total(m, "croupier_upkeep_processes") == 1  # one worker of the two
    assert total(m, "croupier_stream_connections") >= 1
    assert 0 <= total(m, "croupier_seamless_outbox_depth") < 100
    lag = [v for labels, v in m["croupier_table_phase_lag_seconds"] if labels["table"] == "m1"]
    assert lag and 0 <= lag[0] < 10, lag
