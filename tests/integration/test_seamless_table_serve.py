"""Seamless seats at a live table the way README's "Seamless wallet" shows it: a real
``croupier wallet-sim`` process seeded from ``players.json``, a real ``croupier serve``
configured by ``CROUPIER_WALLETS`` (the key file the simulator wrote) whose background
runners deal on the system clock. Two seamless sessions opened on the operator's route
join a table with short windows, bet (a side bet too) in the real betting windows and
decide in the real step windows for three rounds. Then, for each player, the wallet's
balance is what croupier's reconciliation (the HTTP endpoint and ``audit-cli wallet
reconcile``) says, every credit reached the wallet once, and ``audit-cli verify
--balances`` passes on the stopped server's data directory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_cli.main import main as audit_cli
from tests.conftest import Store
from tests.integration.test_http_serve import ROOT, free_port, launch
from wallet.sim.admin import SimAdmin

START = 100_000
ROUNDS = 3
TABLE = "ibj-fast"
# Short real windows (the schema's floor is 1 s): a round lasts a few seconds.
FAST = {"betting_ms": 2_500, "insurance_ms": 1_000, "step_ms": 1_000, "grace_ms": 100}
OP_TOKEN = "op-token"
PENDING = ("pending-delivery", "rollback-pending", "pending-outcome")


@contextmanager
def wallet_sim(workdir: Path) -> Iterator[str]:
    """README's ``croupier wallet-sim --port … --db wallet-sim.sqlite --players players.json``
    in ``workdir`` (it writes ``wallet-sim.key`` there), once /health answers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")}
    env.pop("WALLET_SIM_KEY", None)
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-m", "api.cli", "wallet-sim", "--port", str(port)]
    cmd += ["--db", "wallet-sim.sqlite", "--players", "players.json", "--log-level", "warning"]
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() >= deadline:
                raise AssertionError("wallet-sim did not start")
            time.sleep(0.1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert "croupier wallet-sim: wallet-sim.sqlite" in out, out


@dataclass
class Player:
    name: str
    sid: str
    token: str
    side_bet: bool
    finished: list[dict[str, Any]] = field(default_factory=list)
    """The seat of each round it bet in, read as ``previous`` once the round settled."""
    code: str | None = None
    """The round it has a main bet in, not yet settled."""
    decided: set[tuple[str, int]] = field(default_factory=set)
    late: int = 0
    """Chips refused as ``betting-closed`` (placed as the window closed)."""

    @property
    def seat(self) -> str:
        return f"/v1/sessions/{self.sid}/tables/{TABLE}"


def post(http: httpx.Client, path: str, token: str, body: Any = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}
    return http.post(path, json=body or {}, headers=headers)


def refused(r: httpx.Response, *codes: str) -> bool:
    """True if ``r`` is a 409 with one of ``codes`` (a window closing under the request);
    anything else but a success fails the test."""
    if r.status_code == 409 and r.json().get("code") in codes:
        return True
    assert r.status_code in (200, 201), r.text
    return False


def act(http: httpx.Client, p: Player, state: dict[str, Any]) -> None:
    """One look at the seat: bet in an open betting window, decide in an open step."""
    rnd = state["round"]
    if p.code is None and len(p.finished) < ROUNDS and rnd["phase"] == "betting":
        r = post(http, f"{p.seat}/bets", p.token, {"bet": "main", "amount": 1_000})
        if refused(r, "betting-closed"):
            p.late += 1
            return
        p.code = rnd["code"]
        if p.side_bet:
            r = post(http, f"{p.seat}/bets", p.token, {"bet": "21+3", "amount": 200})
            p.late += refused(r, "betting-closed")
        return
    if p.code != rnd["code"] or not state["options"]:
        return
    step = int(rnd["step"] or 0)
    if (p.code, step) in p.decided:
        return
    names = [o["decision"] for o in state["options"]]
    if rnd["phase"] == "insurance":
        r = post(http, f"{p.seat}/insurance", p.token, {"take": p.side_bet})
    else:
        hand = state["seat"]["hands"][state["seat"]["active_hand"]]
        total = hand["total"]
        if "split" in names:
            pick = "split"
        elif "double" in names and total in (9, 10, 11):
            pick = "double"
        elif "cash-out" in names and not p.side_bet and total in (15, 16):
            pick = "cash-out"
        else:
            pick = "hit" if total < 17 and "hit" in names else "stand"
        r = post(http, f"{p.seat}/decide", p.token, {"step": step, "decision": pick})
    if not refused(r, "step-closed", "already-decided"):
        p.decided.add((p.code, step))


def play(http: httpx.Client, players: list[Player], within: float) -> None:
    """Poll every seat until each has finished ``ROUNDS`` rounds (a deadline, no fixed
    waits: the runner's real clock sets the pace)."""
    deadline = time.monotonic() + within
    while any(len(p.finished) < ROUNDS for p in players):
        assert time.monotonic() < deadline, [(p.name, len(p.finished), p.code) for p in players]
        for p in players:
            state = http.get(p.seat, headers={"Authorization": f"Bearer {p.token}"}).json()
            rnd = state["round"]
            if rnd is None:  # the runners have not found the new table yet
                continue
            if p.code is not None and rnd["code"] != p.code:
                previous = state["previous"]
                assert previous is not None and previous["code"] == p.code, state
                assert previous["phase"] == "settled", previous
                p.finished.append(previous)
                p.code = None
            act(http, p, state)
        time.sleep(0.05)  # the poll's pace


def transactions(http: httpx.Client) -> list[dict[str, Any]]:
    """Every reconciliation row of operator ``op``, following the cursor."""
    rows: list[dict[str, Any]] = []
    after = 0
    while True:
        page = http.get(
            "/v1/wallet/transactions",
            params={"operator": "op", "after": after, "limit": 50},
            headers={"Authorization": f"Bearer {OP_TOKEN}"},
        ).json()
        rows += page["transactions"]
        if page["next_after"] is None:
            return rows
        after = page["next_after"]


def net_of(rows: list[dict[str, Any]], name: str) -> int:
    """What croupier's log says the wallet moved for the player: credits acknowledged
    minus debits accepted and not rolled back (``totals``' net)."""
    net = 0
    for r in rows:
        if r["player_token"] != name:
            continue
        if r["call"] == "debit" and r["state"] == "accepted":
            net -= r["amount"]
        elif r["call"] == "credit" and r["state"] == "accepted":
            net += r["amount"]
    return net


def test_two_seamless_seats_play_real_rounds_against_wallet_sim(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On SQLite (the data directory's file) and on PostgreSQL (``CROUPIER_DATABASE_URL``,
    a fresh schema)."""
    names = ["ann", "bob"]
    players_file = [{"token": n, "currency": "EUR", "balance": START} for n in names]
    (tmp_path / "players.json").write_text(json.dumps(players_file))
    data = tmp_path / "data"
    with wallet_sim(tmp_path) as wallet_base:
        key = (tmp_path / "wallet-sim.key").read_text().strip().encode()
        admin = SimAdmin(wallet_base, key)
        wallets = {
            "op": {"mode": "seamless", "base_url": wallet_base, "key_file": "wallet-sim.key"}
        }
        base, _, proc = launch(
            data,
            cwd=tmp_path,
            CROUPIER_WALLETS=json.dumps(wallets),
            CROUPIER_OPERATOR_TOKEN=OP_TOKEN,
            **({} if store.database_url is None else {"CROUPIER_DATABASE_URL": store.database_url}),
        )
        try:
            with httpx.Client(base_url=base, timeout=30) as http:
                r = post(
                    http,
                    "/v1/tables",
                    OP_TOKEN,
                    {"table": TABLE, "currency": "EUR", "config": FAST},
                )
                assert r.status_code == 201, r.text
                players = []
                for n in names:
                    # README's curl, header for header (without its JSON content type the
                    # body is a form's: 422 invalid-request).
                    body = json.dumps({"operator": "op", "player_token": n, "currency": "EUR"})
                    r = http.post(
                        "/v1/seamless/sessions",
                        content=body,
                        headers={
                            "Authorization": f"Bearer {OP_TOKEN}",
                            "Idempotency-Key": f"s-{n}",
                            "Content-Type": "application/json",
                        },
                    )
                    assert r.status_code == 201, r.text
                    opened = r.json()
                    assert opened["balance"] == START
                    p = Player(n, opened["session_id"], opened["token"], side_bet=n == "ann")
                    assert post(http, f"{p.seat}/join", p.token).status_code == 200
                    players.append(p)

                play(http, players, within=60)

                deadline = time.monotonic() + 20
                while True:
                    rows = transactions(http)
                    pending = [r for r in rows if r["state"] in PENDING]
                    if not pending:
                        break
                    assert time.monotonic() < deadline, pending  # the outbox still delivering
                    time.sleep(0.05)
                for p in players:
                    balance = http.get(
                        f"/v1/seamless/sessions/{p.sid}/balance",
                        headers={"Authorization": f"Bearer {p.token}"},
                    ).json()["balance"]
                    assert balance == admin.balance(p.name)
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=30)
        assert proc.returncode in (0, -signal.SIGTERM), out
        assert "Application shutdown complete" in out, out
        assert "Traceback" not in out, out
        sim_rows = admin.transactions()
        balances = {n: admin.balance(n) for n in names}
        admin.close()

    ann = next(p for p in players if p.name == "ann")
    assert any(s["bets"].get("21+3") for s in ann.finished), ann.finished  # a side bet played
    by_id = {r["transaction_id"]: r for r in sim_rows}
    assert len(by_id) == len(sim_rows)  # the wallet keys its books by transaction id
    for p in players:
        assert len(p.finished) == ROUNDS
        mine = [r for r in rows if r["player_token"] == p.name]
        # What the wallet holds is what croupier's log says it was sent, net.
        assert balances[p.name] == START + net_of(rows, p.name), (p.name, mine, sim_rows)
        # The seats' own books agree: what each round staked and paid.
        seats_net = sum(s["paid"] - s["staked"] for s in p.finished)
        assert balances[p.name] == START + seats_net, (p.name, p.finished)
        for r in mine:
            sim = by_id.get(r["transaction_id"])
            if r["call"] == "credit":  # each win reached the wallet, applied once
                assert sim is not None and sim["status"] == "ok", (r, sim)
                assert sim["amount"] == r["amount"] and sim["state"] == "applied", (r, sim)
            elif r["state"] == "accepted":  # a debit taken once, never rolled back
                assert sim is not None and sim["state"] == "applied", (r, sim)
            elif r["state"] == "rolled-back" and sim is not None:
                assert sim["state"] == "rolled-back", (r, sim)
        debits = [r for r in mine if r["call"] == "debit" and r["state"] == "accepted"]
        assert len(debits) >= ROUNDS  # a main bet each round at least

    db = str(data / "casino.sqlite") if store.database_url is None else store.database_url
    capsys.readouterr()
    assert audit_cli(["wallet", "reconcile", "--operator", "op", "--db", db, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["transaction_id"] for e in listed["transactions"]] == [
        r["transaction_id"] for r in rows
    ]
    for p in players:
        t = listed["totals"]["players"][f"op:{p.name}"]
        assert t["pending"] == 0 and balances[p.name] == START + t["net"], t
    # README's command as written (a table for people): one row per transaction.
    assert audit_cli(["wallet", "reconcile", "--operator", "op", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "totals per player" in text and all(f"op:{n}" in text for n in names), text
    pin = str(data / "keys" / "keyring.json")
    assert audit_cli(["verify", "--db", db, "--pin", pin, "--jobs", "1", "--balances"]) == 0
