"""A small pooled HTTP/1.1 client over the standard library's ``http.client``, for the
calls croupier makes to a wallet: the part of ``httpx.Client`` that
:class:`wallet.client.WalletClient` uses (``post``, ``close``), at about a quarter of its
CPU per call (``bench/bench_seamless.py`` measured 0.5 ms against 2.3 ms on loopback;
with the Python side of croupier CPU-bound, that is rounds per second).

Bounded: at most ``max_connections`` connections, a caller waits ``pool`` seconds for one
(else ``httpx.PoolTimeout``). Timeouts as httpx's: ``connect``, and ``read`` for each
socket read. Failures are raised as the httpx exceptions the wallet client handles
(``httpx.TimeoutException``, ``httpx.TransportError``). A connection that failed is
dropped; one idle longer than ``idle_seconds`` (below the server's keep-alive) is not
reused, since a request on a connection the server has closed fails ambiguously.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

import httpx


@dataclass(frozen=True)
class Reply:
    status_code: int
    headers: Mapping[str, str]
    content: bytes


class _Headers(dict[str, str]):
    """Header names case-insensitively, as httpx's ``Headers.get``."""

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)


class PooledHttp:
    def __init__(
        self,
        base_url: str,
        *,
        connect: float = 2.0,
        read: float = 5.0,
        pool: float = 2.0,
        max_connections: int = 50,
        idle_seconds: float = 4.0,
    ) -> None:
        u = urlparse(base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._https = u.scheme == "https"
        self._host = u.hostname or "127.0.0.1"
        self._port = u.port or (443 if self._https else 80)
        self._prefix = u.path.rstrip("/")
        self._connect, self._read, self._pool = connect, read, pool
        self._idle_seconds = idle_seconds
        self._slots = threading.BoundedSemaphore(max_connections)
        self._lock = threading.Lock()
        self._idle: list[tuple[float, http.client.HTTPConnection]] = []
        self._closed = False

    def _connection(self) -> http.client.HTTPConnection:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                since, conn = self._idle.pop()
                if now - since < self._idle_seconds:
                    return conn
                conn.close()
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self._connect)
        try:
            conn.connect()
        except TimeoutError as e:
            raise httpx.ConnectTimeout(f"connect: {e}") from e
        except OSError as e:
            raise httpx.ConnectError(f"connect: {e}") from e
        assert conn.sock is not None
        conn.sock.settimeout(self._read)
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def post(self, path: str, *, content: bytes, headers: Mapping[str, str]) -> Reply:
        if self._closed:
            raise httpx.ConnectError("the client is closed")
        if not self._slots.acquire(timeout=self._pool):
            raise httpx.PoolTimeout("no connection free in the pool")
        try:
            conn = self._connection()
            try:
                conn.request("POST", self._prefix + path, body=content, headers=dict(headers))
                response = conn.getresponse()
                body = response.read()
            except TimeoutError as e:
                conn.close()
                raise httpx.ReadTimeout(f"read: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise httpx.RemoteProtocolError(f"{type(e).__name__}: {e}") from e
            reply = Reply(
                response.status,
                _Headers((k.lower(), v) for k, v in response.getheaders()),
                body,
            )
            if response.will_close:
                conn.close()
            else:
                with self._lock:
                    self._idle.append((time.monotonic(), conn))
            return reply
        finally:
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for _, conn in self._idle:
                conn.close()
            self._idle.clear()
