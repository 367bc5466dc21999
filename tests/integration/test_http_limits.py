"""HTTP limits (issue 11, attack 2): the body of an unauthenticated or oversized request is
never read, bad tokens are throttled per address, each credential has a rate, and
session tokens expire (and die with their session)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Credentials
from api.limits import Buckets
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.test_http_serve import launch

OPERATOR = "limits-operator-token-0123456789abcdef"
AUDITOR = "limits-auditor-token-0123456789abcdef"


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@contextmanager
def server(data_dir: Path, **env_extra: str) -> Iterator[tuple[str, int, subprocess.Popen[str]]]:
    base, port, proc = launch(
        data_dir, CROUPIER_OPERATOR_TOKEN=OPERATOR, CROUPIER_AUDITOR_TOKEN=AUDITOR, **env_extra
    )
    try:
        yield base, port, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def _send_headers(port: int, token: str, length: int, chunked: bool = False) -> tuple[int, int]:
    """Announce a huge POST body, then stream up to ``length`` bytes of it while reading
    the answer; returns (status, bytes of body sent before the answer came)."""
    sock = socket.create_connection(("127.0.0.1", port))
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
    sock.sendall(
        (
            "POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nIdempotency-Key: k\r\n{framing}\r\n\r\n"
        ).encode()
    )
    sock.settimeout(0.05)
    sent, chunk, reply = 0, b"x" * (1 << 20), b""
    try:
        while sent < length and b"\r\n" not in reply:
            try:
                reply += sock.recv(4096)
                break
            except TimeoutError:
                pass
            try:
                if chunked:
                    sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                else:
                    sock.sendall(chunk)
                sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        sock.settimeout(10)
        while b"\r\n" not in reply:
            data = sock.recv(4096)
            if not data:
                break
            reply += data
    finally:
        sock.close()
    return int(reply.split(b" ")[1]), sent


def test_a_600_mb_body_is_refused_without_being_read_and_memory_stays_low(
    tmp_path: Path,
) -> None:
    with server(tmp_path) as (base, port, proc):
        # Warm up first (the paytable catalogue is computed at start-up, in the background).
        op = {"Authorization": f"Bearer {OPERATOR}"}
        assert httpx.get(f"{base}/v1/games", headers=op, timeout=60).status_code == 200
        _send_headers(port, OPERATOR, 1 << 20)
        before = _rss_kb(proc.pid)
        # A wrong token: 401 before any of the body is read.
        status, sent = _send_headers(port, "wrong-token", 600 << 20)
        assert status == 401
        assert sent <= 8 << 20, f"{sent >> 20} MB of the body went in before the answer"
        # The right token but 600 MB announced: 413 from the Content-Length alone.
        status, sent = _send_headers(port, OPERATOR, 600 << 20)
        assert status == 413 and sent <= 8 << 20
        # The right token, a chunked body that never ends: 413 once past the limit.
        status, sent = _send_headers(port, OPERATOR, 600 << 20, chunked=True)
        assert status == 413 and sent <= 16 << 20
        grown = _rss_kb(proc.pid) - before
        assert grown < 50_000, f"server grew by {grown} kB"


def test_300_bad_tokens_from_one_address_are_throttled_with_retry_after(tmp_path: Path) -> None:
    with server(tmp_path) as (base, _, _), httpx.Client(base_url=base) as client:
        answers = [
            client.get("/v1/games", headers={"Authorization": f"Bearer bad-{i}"})
            for i in range(300)
        ]
        statuses = [r.status_code for r in answers]
        assert statuses[:20] == [401] * 20  # the burst
        assert statuses.count(429) >= 250
        limited = next(r for r in answers if r.status_code == 429)
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.json()["code"] == "rate-limited"
        # The throttle is per address and for failures: the operator still gets in.
        r = client.get("/v1/games", headers={"Authorization": f"Bearer {OPERATOR}"})
        assert r.status_code == 200


def test_each_credential_has_its_own_rate(store: Store) -> None:
    settings = store.settings(
        operator_token=OPERATOR,
        auditor_token=AUDITOR,
        requests_per_credential_per_second=5.0,
        requests_per_address_per_second=1000.0,
    )
    app = store.open()
    with TestClient(create_app(app, settings)) as client:
        op = {"Authorization": f"Bearer {OPERATOR}"}
        statuses = [client.get("/v1/games", headers=op).status_code for _ in range(30)]
        assert statuses[:10] == [200] * 10 and 429 in statuses
        # The auditor's bucket is its own.
        aud = {"Authorization": f"Bearer {AUDITOR}"}
        assert client.get("/v1/audit/keys", headers=aud).status_code == 200


def test_buckets_refill_at_their_rate() -> None:
    now = [0.0]
    buckets = Buckets(2.0, 4.0, lambda: now[0])
    assert [buckets.take("a") for _ in range(4)] == [0.0] * 4
    assert buckets.take("a") == 0.5  # empty: one token in half a second
    now[0] += 0.5
    assert buckets.take("a") == 0.0
    assert buckets.take("b") == 0.0  # another key, another bucket


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_session_tokens_expire_and_die_with_their_session(store: Store) -> None:
    clock = Clock()
    credentials = Credentials(OPERATOR, AUDITOR, b"s" * 32, "test", "test", 3600, clock, 300)
    settings = store.settings(auth_failure_burst=100)
    app = store.open()
    app.open_account("o", "tia", "EUR")
    app.deposit("d", "tia", 5_000)
    api = create_app(app, settings, credentials=credentials)
    with TestClient(api) as client:
        op = {"Authorization": f"Bearer {OPERATOR}", "Idempotency-Key": "s1"}
        opened = client.post("/v1/sessions", headers=op, json={"player_id": "tia", "buy_in": 500})
        sid, token = opened.json()["session_id"], opened.json()["token"]
        expires = int(token.split(".")[1])
        assert abs(expires - (clock.now + 3600)) < 5  # the token carries its expiry
        player = {"Authorization": f"Bearer {token}"}
        assert client.get(f"/v1/sessions/{sid}", headers=player).status_code == 200
        # Expiry counts from the session's opening, which a loaded machine may write
        # seconds after the clock was made: step past the token's own expiry.
        clock.now = expires + 1
        r = client.get(f"/v1/sessions/{sid}", headers=player)
        assert (r.status_code, r.json()["code"]) == (401, "unauthenticated")
        # A tampered expiry breaks the MAC.
        forged = token.replace(f".{expires}.", f".{expires + 10_000}.")
        r = client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {forged}"})
        assert r.status_code == 401
        # After the session closes (and its grace has passed) the token is refused too.
        clock.now -= 3601
        op["Idempotency-Key"] = "c1"
        assert client.post(f"/v1/sessions/{sid}/close", headers=op).status_code == 200
        # The close was stamped by the ledger's (real) clock: the fake one starts from now,
        # not from when the test began (a slow machine may be seconds on by here).
        clock.now = time.time()
        assert client.get(f"/v1/sessions/{sid}", headers=player).status_code == 200  # grace
        clock.now += 301
        r = client.get(f"/v1/sessions/{sid}", headers=player)
        assert r.status_code == 401 and "closed" in r.json()["message"]


def test_the_body_limit_is_configurable(store: Store) -> None:
    settings = store.settings(operator_token=OPERATOR, auditor_token=AUDITOR, max_body_bytes=100)
    app = store.open()
    with TestClient(create_app(app, settings)) as client:
        op = {"Authorization": f"Bearer {OPERATOR}", "Idempotency-Key": "a1"}
        body = {"player_id": "x" * 90, "currency": "EUR"}
        before = raw_rows(store)
        r = client.post("/v1/accounts", headers=op, content=json.dumps(body))
        assert (r.status_code, r.json()["code"]) == (413, "payload-too-large")
        assert raw_rows(store) == before  # nothing written
