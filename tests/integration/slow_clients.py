"""A slow-headers attacker for the connection-limit tests: ``count`` connections from one
address, each sending its request headers a byte a second; every second the ones the
server closed are opened again (a persistent attacker; a flood of connection attempts as
fast as they are refused is another attack, for the firewall's rate limits)."""

from __future__ import annotations

import errno
import os
import selectors
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HEADERS = b"GET /v1/games HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096


class SlowClients:
    """The attacker in this process (a thread); :class:`Attacker` runs it in another."""

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
            if time.monotonic() >= next_byte:  # one more byte on every connection
                next_byte += 1.0
                for _ in range(self.count - len(sel.get_map())):  # and the closed ones back
                    self._connect(sel)
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


class Attacker:
    """:class:`SlowClients` in a process of its own, so that the probes of the process
    that starts it never wait on the attacker's work (one interpreter lock)."""

    def __init__(self, port: int, count: int) -> None:
        self.args = [sys.executable, "-m", "tests.integration.slow_clients", str(port), str(count)]
        self.connects = self.closed_by_server = 0

    def __enter__(self) -> Attacker:
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": root}
        self.proc = subprocess.Popen(
            self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=root
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "connecting"
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self.proc.communicate("stop\n", timeout=60)
        self.connects, self.closed_by_server = (int(x) for x in out.split())


def main() -> None:
    port, count = int(sys.argv[1]), int(sys.argv[2])
    with SlowClients(port, count) as clients:
        print("connecting", flush=True)
        sys.stdin.readline()  # until told to stop
    print(clients.connects, clients.closed_by_server, flush=True)


if __name__ == "__main__":
    main()
