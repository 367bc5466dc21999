"""A slow-headers attacker for the connection-limit tests and bench: ``count`` connections
from one address, each sending its request headers a byte at a time, reconnecting when the
server closes one (as a persistent attacker does)."""

from __future__ import annotations

import errno
import selectors
import socket
import threading
import time

HEADERS = b"GET /v1/games HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096


class SlowClients:
    def __init__(self, port: int, count: int, source: str = "127.0.0.1") -> None:
        self.port, self.count, self.source = port, count, source
        self.stop = threading.Event()
        self.connects = 0  # connections made (first ones and reconnections)
        self.closed_by_server = 0
        self.thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)

    def __enter__(self) -> SlowClients:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def _connect(self, sel: selectors.BaseSelector) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.bind((self.source, 0))
        err = sock.connect_ex(("127.0.0.1", self.port))
        if err not in (0, errno.EINPROGRESS):
            sock.close()
            return
        self.connects += 1
        sel.register(sock, selectors.EVENT_READ, 0)

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        for _ in range(self.count):
            self._connect(sel)
        next_byte = time.monotonic() + 1.0
        while not self.stop.is_set():
            for key, _ in sel.select(timeout=0.1):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if not data:  # closed (or answered and closed): come back
                    sel.unregister(sock)
                    sock.close()
                    self.closed_by_server += 1
            missing = self.count - len(sel.get_map())
            for _ in range(missing):
                self._connect(sel)
            if time.monotonic() >= next_byte:  # one more byte on every connection
                next_byte += 1.0
                for key in list(sel.get_map().values()):
                    sock = key.fileobj  # type: ignore[assignment]
                    sent = key.data
                    try:
                        sock.send(HEADERS[sent : sent + 1])
                    except OSError:
                        continue
                    sel.modify(sock, selectors.EVENT_READ, sent + 1)
        for key in list(sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        sel.close()
