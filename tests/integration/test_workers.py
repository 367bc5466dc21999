"""Several worker processes on one PostgreSQL database (``croupier serve --workers N``).

Each worker has its own application, writer and caches; what one worker cached may have
been changed by another, the same Idempotency-Key may reach two workers, and any process
may seal (the lease holder's timer, an explicit seal, the last one on close). Shown here:
the refusal on SQLite, the sealer's fence, histories that see the other workers' rounds,
and two workers under an HTTP load of overlapping sessions after which ``audit-cli
verify --balances`` passes and every balance a client reads equals the one rebuilt from
the log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from audit_cli.main import main as audit_cli
from ledger.accounts import account_id_for
from ledger.checkpoints import Checkpoint, checkpoint_id
from ledger.sealer_fence import lock_name
from tests.conftest import PG_URL, Store, _make_store
from tests.helpers import open_session, raw_rows
from tests.integration.test_http_serve import ROOT, launch

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Store]:
    yield from _make_store("postgres", tmp_path)


def test_several_workers_on_sqlite_are_refused_with_one_line_and_nothing_created(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    env.update(CROUPIER_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "api.cli", "serve", "--workers", "2", "--port", "1"]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "error: --workers 2 needs PostgreSQL (set CROUPIER_DATABASE_URL): "
        "on SQLite croupier serve is one process"
    ]
    assert not (tmp_path / "data").exists()  # no store, no keys, no tokens


def _checkpoints(store: Store) -> list[int]:
    rows = raw_rows(store)
    ids = {str(checkpoint_id(n)): n for n in range(1, 200)}
    return sorted(ids[o] for _, o, _, _, _ in rows if o in ids)


def test_a_timer_seal_while_another_process_holds_the_fence_writes_nothing(pg: Store) -> None:
    app = pg.open()
    open_session(app)
    assert app.seal() is not None
    app.deposit("more", "ann", 5)
    schema = pg.schema
    assert schema is not None
    name = (lock_name(schema, "casino_events"),)
    other = psycopg.connect(PG_URL, autocommit=True)  # "another process" sealing now
    try:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", name)
        before = raw_rows(pg)
        assert app.sealer.seal(wait=False) is None
        assert app.sealer.skipped == 1
        assert raw_rows(pg) == before
        other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", name)
    finally:
        other.close()
    sealed = app.sealer.seal(wait=False)
    assert sealed is not None and sealed["seq"] == 2
    assert _checkpoints(pg) == [1, 2]


def test_two_processes_sealing_while_both_write_keep_one_checkpoint_chain(pg: Store) -> None:
    first, second = pg.open(), pg.open()  # two applications: two pools, two "processes"
    open_session(first, "ann")
    open_session(second, "bob")
    stop = threading.Event()
    errors: list[BaseException] = []

    def seal_often(app: Any) -> None:
        try:
            while not stop.is_set():
                app.sealer.seal(wait=False)
        except BaseException as e:  # surfaced below
            errors.append(e)

    sealers = [threading.Thread(target=seal_often, args=(a,)) for a in (first, second)]
    for t in sealers:
        t.start()
    try:
        for n in range(40):
            (first if n % 2 else second).deposit(f"d{n}", "ann" if n % 3 else "bob", 10)
    finally:
        stop.set()
        for t in sealers:
            t.join()
    assert not errors
    second.seal()
    seqs = _checkpoints(pg)
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 2
    latest = first.find(Checkpoint, checkpoint_id(seqs[-1]))
    assert latest is not None and latest.tree_size == len(raw_rows(pg)) - 1  # all but itself
    pin = ["--pin", f"SHA256:{first.key_history.genesis_fingerprint}"]
    assert audit_cli(["verify", "--db", pg.db, *pin, "--jobs", "1"]) == 0


def test_a_history_read_by_one_process_shows_what_another_wrote_and_voided(pg: Store) -> None:
    first, second = pg.open(), pg.open()
    sid = open_session(first, "ann")
    first.history.account_history("ann")  # a first read before the other process writes
    played = second.red_dog_bet("bet", sid, 100)
    if played.status == "open":
        played = second.red_dog_see("see", sid)
    voided = second.void_round("void", played.code, "display fault", "INC-1")
    [row] = first.history.account_history("ann")
    assert (row["code"], row["status"], row["refunded"]) == (
        played.code,
        "voided",
        voided.refunded,
    )
    assert [g["code"] for g in first.history.last_games(sid)] == [played.code]
    dealt = first.vp_deal("deal", sid, "jb-4line", 10, 1, 4)
    assert [g["code"] for g in second.history.last_games(sid)] == [dealt.code, played.code]


# -- two workers under an HTTP load --------------------------------------------------------

PLAYERS = 4  # sessions; two clients play each one at the same time
ROUNDS = 12  # round attempts per client
EXPECTED = {200, 201, 409}  # 409: the other client of the session got there first


class Client:
    """A game client sharing its session with another client: it reads the open round
    and sends what comes next (a Red Dog see, a JB draw or collect), else starts a round,
    alternating the games; a 409 is the other client's move landing first."""

    def __init__(self, base: str, name: str, sid: str, token: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=60)
        self.name, self.sid, self.headers = name, sid, {"Authorization": f"Bearer {token}"}
        self.sent = 0
        self.statuses: list[int] = []

    def post(self, path: str, body: Any = None) -> httpx.Response:
        self.sent += 1
        key = {"Idempotency-Key": f"{self.name}-{self.sent}"}
        r = self.http.post(path, json=body, headers={**self.headers, **key})
        self.statuses.append(r.status_code)
        return r

    def play(self) -> None:
        base = f"/v1/sessions/{self.sid}"
        for n in range(ROUNDS * 3):
            r = self.http.get(f"{base}/round", headers=self.headers)
            self.statuses.append(r.status_code)
            current = r.json()["round"] if r.status_code == 200 else None
            if current and current["status"] == "open":
                if current["game"] == "red-dog":
                    self.post(f"{base}/red-dog/see")
                elif current["view"].get("phase") == "dealt":
                    self.post(f"{base}/video-poker/draw", {"holds": []})
                else:
                    self.post(f"{base}/video-poker/collect")
            elif n % 2:
                self.post(f"{base}/red-dog/bet", {"bet": 100})
            else:
                deal = {"variant": "jb-4line", "coin_value": 10, "coins": 5, "lines": 4}
                self.post(f"{base}/video-poker/deal", deal)


def _workers(pid: int) -> list[int]:
    """The worker processes uvicorn's supervisor ``pid`` started (not its resource tracker)."""
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    found = [int(p) for p in text.split()]
    return [p for p in found if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launch_two_workers(pg: Store) -> tuple[Path, str, str, subprocess.Popen[str]]:
    """``croupier serve --workers 2`` on ``pg``: its data directory, base URL, operator
    token and process."""
    assert pg.database_url is not None
    data = pg.data_dir / "serve"
    data.mkdir()
    operator = "op-" + os.urandom(8).hex()
    base, _, proc = launch(
        data,
        "--workers",
        "2",
        CROUPIER_DATABASE_URL=pg.database_url,
        CROUPIER_OPERATOR_TOKEN=operator,
        CROUPIER_AUDITOR_TOKEN="aud-" + os.urandom(8).hex(),
    )
    return data, base, operator, proc


def test_two_workers_under_http_load_on_overlapping_sessions_keep_the_books(
    pg: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    data, base, operator, proc = launch_two_workers(pg)
    try:
        op = httpx.Client(
            base_url=base, timeout=60, headers={"Authorization": f"Bearer {operator}"}
        )
        workers = _workers(proc.pid)
        assert len(workers) == 2
        cpu_before = {w: _cpu(w) for w in workers}

        def post(path: str, key: str, body: Any) -> httpx.Response:
            return op.post(path, json=body, headers={"Idempotency-Key": key})

        sessions = []
        for n in range(PLAYERS):
            player = f"p{n}"
            assert (
                post(
                    "/v1/accounts", f"open-{player}", {"player_id": player, "currency": "EUR"}
                ).status_code
                == 201
            )
            # The same deposit, same key, sent at once on 6 connections (both workers): one effect.
            answers: list[httpx.Response] = []

            def send(player: str = player, answers: list[httpx.Response] = answers) -> None:
                with httpx.Client(base_url=base, timeout=60) as c:
                    answers.append(
                        c.post(
                            f"/v1/accounts/{player}/deposits",
                            json={"amount": 100_000},
                            headers={
                                "Authorization": f"Bearer {operator}",
                                "Idempotency-Key": f"dep-{player}",
                            },
                        )
                    )

            senders = [threading.Thread(target=send) for _ in range(6)]
            for t in senders:
                t.start()
            for t in senders:
                t.join()
            assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
            assert {r.json()["balance"] for r in answers} == {100_000}
            opened = post(
                "/v1/sessions", f"buy-in-{player}", {"player_id": player, "buy_in": 50_000}
            )
            assert opened.status_code == 201, opened.text
            sessions.append((player, opened.json()["session_id"], opened.json()["token"]))

        clients = [
            Client(base, f"{player}-c{k}", sid, token)
            for player, sid, token in sessions
            for k in range(2)
        ]
        threads = [threading.Thread(target=c.play) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in clients:
            assert set(c.statuses) <= EXPECTED | {404}, (c.name, sorted(set(c.statuses)))
        assert sum(c.statuses.count(201) + c.statuses.count(200) for c in clients) > PLAYERS * 20
        assert all(_cpu(w) - cpu_before[w] > 0.2 for w in workers), "a worker served nothing"
        assert _workers(proc.pid) == workers  # none was killed as "hung" and restarted

        expected: dict[str, int] = {}
        for player, sid, _ in sessions:
            closed = post(f"/v1/sessions/{sid}/close", f"close-{player}", None)
            assert closed.status_code == 200, closed.text
            history = op.get(f"/v1/accounts/{player}/history", params={"limit": 1000}).json()
            balance = op.get(f"/v1/accounts/{player}").json()["balance"]
            # deposits - withdrawals + the history's net total is the player's money
            assert balance == 100_000 + history["totals"]["net"], player
            expected[f"account:{account_id_for(player)}"] = balance
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the supervisor and its workers
            out, _ = proc.communicate()
    assert proc.returncode in (0, -signal.SIGTERM), out
    assert out.count("Application shutdown complete") == 2, out

    pin = str(data / "keys" / "keyring.json")
    capsys.readouterr()
    assert (
        audit_cli(["verify", "--db", pg.db, "--pin", pin, "--balances", "--json", "--jobs", "1"])
        == 0
    )
    rebuilt = json.loads(capsys.readouterr().out)["balances"]
    assert {k: rebuilt[k] for k in expected} == expected
