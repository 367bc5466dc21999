"""Connection limits (issue 22, item 3): slow clients cannot exhaust ``croupier serve``.
Headers and bodies have deadlines, connections are capped per address and in all, and
beyond a cap ``/health`` is still answered."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from api.connection_guard import FD_RESERVE, Admission, Proxies, connection_cap
from ledger.settings import Settings
from tests.integration.slow_clients import Attacker
from tests.integration.test_http_serve import launch

OPERATOR = "conn-operator-token-0123456789abcdef"


@contextmanager
def server(
    data_dir: Path, descriptors: int | None = None, said: list[str] | None = None, **env: Any
) -> Iterator[tuple[str, int, subprocess.Popen[str]]]:
    """``croupier serve`` with these limits; what it printed goes into ``said`` when it
    has stopped (a failing test shows it)."""
    env["CROUPIER_OPERATOR_TOKEN"] = OPERATOR
    base, port, proc = launch(data_dir, descriptors=descriptors, **env)
    try:
        yield base, port, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
        if said is not None:
            said.append(output)


def _raw(port: int, request: bytes, wait: float = 10.0) -> bytes:
    """Send ``request`` on a new connection; everything the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(request)
        reply = b""
        while True:
            try:
                data = sock.recv(4096)
            except (ConnectionResetError, TimeoutError):
                break
            if not data:
                break
            reply += data
    return reply


def _open_account(player: str) -> bytes:
    body = json.dumps({"player_id": player, "currency": "EUR"}).encode()
    return (
        b"POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {OPERATOR}\r\nIdempotency-Key: {player}\r\n".encode()
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def test_1100_slow_header_connections_leave_health_answering_within_a_second(
    tmp_path: Path,
) -> None:
    # The attack of issue 22: 1,100 connections from one address, a byte of headers a
    # second each, reconnecting when closed, against a 1,024-descriptor process. The
    # probes come from the same address (the worst case: it is over its cap).
    said: list[str] = []
    failed: str | None = None
    with server(tmp_path, descriptors=1024, said=said) as (base, port, proc):
        probes: list[int] = []
        with Attacker(port, 1100) as attack:
            time.sleep(2)  # the connections are open
            start = time.monotonic()
            end = start + 15  # past the 10 s header deadline
            while time.monotonic() < end:
                try:
                    r = httpx.get(f"{base}/health", timeout=1.0)
                    probes.append(r.status_code)
                except httpx.TransportError as e:
                    at = time.monotonic() - start
                    failed = f"/health failed after {len(probes)} probes, {at:.2f} s in: {e!r}"
                    break
                time.sleep(0.2)
        if failed is None:
            assert proc.poll() is None
            assert len(probes) >= 15 and set(probes) == {200}  # at least one a second
            # The caps refused (and the deadline closed) the attacker's connections.
            assert attack.closed_by_server > 1100
            # Business as usual afterwards.
            op = {"Authorization": f"Bearer {OPERATOR}"}
            assert httpx.get(f"{base}/v1/games", headers=op, timeout=30).status_code == 200
    # A probe that failed: what the server logged then (an accept error, say) goes with it.
    assert failed is None, f"{failed}\nthe server said:\n" + "\n".join(said[0].splitlines()[-40:])


def test_beyond_the_per_address_cap_a_request_is_refused_503_and_health_answered(
    tmp_path: Path,
) -> None:
    with server(tmp_path, CROUPIER_MAX_CONNECTIONS_PER_ADDRESS="3") as (base, port, _):
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            time.sleep(0.5)
            reply = _raw(port, b"GET /v1/games HTTP/1.1\r\nHost: x\r\n\r\n")
            head, _, body = reply.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503"), reply
            assert b"retry-after: 1" in head.lower() and b"connection: close" in head.lower()
            assert b'"too-many-connections"' in body
            health = _raw(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert health.startswith(b"HTTP/1.1 200"), health
            # A command refused at the connection changes nothing (checked below).
            reply = _raw(port, _open_account("refused-at-the-door"))
            assert reply.startswith(b"HTTP/1.1 503"), reply
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.5)
        # Released: served again; the refused account was never opened.
        op = {"Authorization": f"Bearer {OPERATOR}"}
        assert httpx.get(f"{base}/v1/games", headers=op, timeout=30).status_code == 200
        r = httpx.get(f"{base}/v1/accounts/refused-at-the-door", headers=op, timeout=30)
        assert r.status_code == 404


def test_headers_body_and_idle_connections_have_deadlines(tmp_path: Path) -> None:
    with server(
        tmp_path,
        CROUPIER_HEADER_TIMEOUT_SECONDS="1",
        CROUPIER_BODY_TIMEOUT_SECONDS="1",
        CROUPIER_KEEP_ALIVE_SECONDS="1",
    ) as (base, port, _):
        # Headers never finished: 408, closed.
        t0 = time.monotonic()
        reply = _raw(port, b"GET /v1/games HTTP/1.1\r\nHost: x\r\n")
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert time.monotonic() - t0 < 8
        # Nothing sent at all: closed, without a word.
        t0 = time.monotonic()
        assert _raw(port, b"") == b""
        assert time.monotonic() - t0 < 8
        # A body announced and never all sent: the connection is closed, nothing opened.
        reply = _raw(port, _open_account("half-sent")[:-5])
        assert not reply.startswith(b"HTTP/1.1 2"), reply
        op = {"Authorization": f"Bearer {OPERATOR}"}
        r = httpx.get(f"{base}/v1/accounts/half-sent", headers=op, timeout=30)
        assert r.status_code == 404
        # An answered request, then silence: the kept-alive connection is closed.
        reply = _raw(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 200") and reply.count(b"HTTP/1.1") == 1


def test_admission_counts_per_address_and_in_all_and_exempts_trusted_proxies() -> None:
    admission = Admission(total=4, per_address=2, proxies=Proxies(["10.0.0.0/8"]))
    assert [admission.admit("1.2.3.4") for _ in range(3)] == [True, True, False]
    assert admission.admit("10.1.1.1") and admission.admit("10.1.1.1")
    assert not admission.admit("10.1.1.1")  # the total
    admission.release("1.2.3.4")
    assert admission.admit("1.2.3.4")
    assert admission.by_address == {"1.2.3.4": 2, "10.1.1.1": 2}


def test_the_connection_cap_stays_within_the_descriptor_limit() -> None:
    settings = Settings(max_connections=1000)
    assert connection_cap(settings, descriptors=1024) == 1024 - FD_RESERVE
    assert connection_cap(settings, descriptors=65536) == 1000


def test_proxies_match_addresses_and_networks() -> None:
    proxies = Proxies(["10.0.0.5", "192.168.0.0/16"])
    assert "10.0.0.5" in proxies and "192.168.3.4" in proxies
    assert "10.0.0.6" not in proxies and "127.0.0.1" not in proxies
    assert "not-an-address" not in proxies
    assert "1.1.1.1" in Proxies(["*"])
    assert "127.0.0.1" not in Proxies([])


def _bad_tokens(base: str, count: int, forwarded: bool) -> list[int]:
    statuses = []
    with httpx.Client(base_url=base, timeout=30) as client:
        for i in range(count):
            headers = {"Authorization": f"Bearer bad-{i}"}
            if forwarded:
                headers["X-Forwarded-For"] = f"203.0.113.{i + 1}"
            statuses.append(client.get("/v1/games", headers=headers).status_code)
    return statuses


def test_a_spoofed_forwarded_for_from_loopback_does_not_reset_a_limit(tmp_path: Path) -> None:
    # The attack of issue 22: 40 bad tokens, then 40 more each naming a new client in
    # X-Forwarded-For. No proxy is trusted (the default): the header is ignored.
    with server(tmp_path) as (base, _, _):
        first = _bad_tokens(base, 40, forwarded=False)
        assert first[:20] == [401] * 20 and first[-1] == 429
        spoofed = _bad_tokens(base, 40, forwarded=True)
        assert spoofed.count(429) >= 38, spoofed  # still the loopback address's bucket


def test_a_trusted_proxy_names_the_client(tmp_path: Path) -> None:
    # The operator's proxy on loopback: its X-Forwarded-For is the client's address, each
    # with a bucket of its own.
    with server(tmp_path, CROUPIER_TRUSTED_PROXIES='["127.0.0.1"]') as (base, _, _):
        _bad_tokens(base, 40, forwarded=False)
        assert _bad_tokens(base, 40, forwarded=True) == [401] * 40
