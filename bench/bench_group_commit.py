"""Benchmark: group commit on PostgreSQL, 50 concurrent in-process clients.

Prints, side by side in one run and for each repetition:

- the raw locked-transaction ceiling: one psycopg connection in a loop doing what the
  library's recorder does per transaction (LOCK TABLE ... IN EXCLUSIVE MODE, three
  400-byte INSERTs, COMMIT), in transactions/s;
- Red Dog (bet, then see if the round is open) and Jacks or Better 4-line (deal, draw the
  recommended holds, collect a pending win) played by ``CLIENTS`` threads, each on its own
  session, through ``Casino.command``: rounds/s, commands/s and the ratio of commands/s to
  the raw ceiling;
- SQL statements and round trips per command, counted on the wire by a small TCP proxy
  between the Casino and PostgreSQL (a statement is an Execute or simple-Query message; a
  round trip is the client speaking again after the server answered). The proxy slows
  the connection, so the counts come from their own short run, not the timed one.

    python bench/bench_group_commit.py [SECONDS] [REPEATS]   # default 5 s, 3 repeats

Uses CROUPIER_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test) in
throw-away schemas.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psycopg

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
CLIENTS = 50


# -- the raw ceiling ----------------------------------------------------------------------


def raw_ceiling(seconds: float) -> float:
    schema = new_schema()
    try:
        with psycopg.connect(PG) as conn:
            conn.execute(f"SET search_path TO {schema}")
            conn.execute("CREATE TABLE raw_events (id bigserial primary key, state bytea)")
            conn.commit()
            row = os.urandom(400)
            n, end = 0, time.perf_counter() + seconds
            start = time.perf_counter()
            while time.perf_counter() < end:
                with conn.transaction():
                    conn.execute("LOCK TABLE raw_events IN EXCLUSIVE MODE")
                    for _ in range(3):
                        conn.execute("INSERT INTO raw_events (state) VALUES (%s)", (row,))
                n += 1
            return n / (time.perf_counter() - start)
    finally:
        drop_schema(schema)


# -- the games -----------------------------------------------------------------------------


def red_dog_round(app: Casino, sid: str, key: str) -> int:
    r = app.red_dog_bet(f"b{key}", sid, 100)
    if r.status == "open":
        app.red_dog_see(f"s{key}", sid)
        return 2
    return 1


def jb_round(app: Casino, sid: str, key: str) -> int:
    r = app.vp_deal(f"d{key}", sid, "jb-4line", 100, 5, 4)
    r = app.vp_act(f"h{key}", sid, ["draw", r.view["recommended"]])
    if r.status == "open":
        app.vp_act(f"c{key}", sid, ["collect"])
        return 3
    return 2


def play(
    app: Casino,
    game: Callable[[Casino, str, str], int],
    seconds: float,
    ready: Callable[[], None] = lambda: None,
) -> tuple[float, float, int]:
    """(rounds/s, commands/s, commands) of CLIENTS threads, each on its own session;
    ``ready`` is called after the set-up (account, deposit, session per client)."""
    tag = uuid.uuid4().hex[:6]
    sids = []
    for i in range(CLIENTS):
        player = f"p{tag}{i}"
        app.open_account(f"a{player}", player, "EUR")
        app.deposit(f"d{player}", player, 10**12)
        sids.append(app.open_session(f"s{player}", player, 10**11).session_id)
    ready()
    counts = [(0, 0)] * CLIENTS
    barrier = threading.Barrier(CLIENTS + 1)
    end = [0.0]

    def client(i: int) -> None:
        rounds = commands = 0
        barrier.wait()
        while time.perf_counter() < end[0]:
            commands += game(app, sids[i], f"{tag}-{i}-{rounds}")
            rounds += 1
        counts[i] = (rounds, commands)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    start = time.perf_counter()
    cpu = time.process_time()
    end[0] = start + seconds
    barrier.wait()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    cpu = time.process_time() - cpu
    played = sum(c for _, c in counts)
    rounds = sum(r for r, _ in counts)
    CPU_PER_ROUND.append(cpu / max(1, rounds))
    return rounds / took, played / took, played


CPU_PER_ROUND: list[float] = []
"""This process's CPU per round of each ``play`` (the machine is shared: CPU per round
moves far less with the load than rounds/s)."""


# -- counting statements and round trips on the wire ----------------------------------------


class WireCounter:
    """A TCP proxy to PostgreSQL counting the client's statements and round trips."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.statements = self.round_trips = 0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> None:
        with self.lock:
            self.statements = self.round_trips = 0

    def _accept(self) -> None:
        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(self.target)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            state = {"answered": True}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _up(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        with contextlib.suppress(OSError):  # the Casino or the server went away
            self._pump_up(src, dst, state)
        dst.close()

    def _pump_up(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        buf, started = b"", False
        while data := src.recv(65536):
            if state["answered"]:
                state["answered"] = False
                with self.lock:
                    self.round_trips += 1
            buf += data
            while True:  # frame the frontend messages (the startup one has no type byte)
                if not started:  # SSL/GSS requests, then the startup message
                    if len(buf) < 8 or len(buf) < struct.unpack("!I", buf[:4])[0]:
                        break
                    size, code = struct.unpack("!II", buf[:8])
                    started = code not in (80877103, 80877104)
                    buf = buf[size:]
                    continue
                if len(buf) < 5:
                    break
                size = struct.unpack("!I", buf[1:5])[0]
                if len(buf) < 1 + size:
                    break
                if buf[:1] in (b"E", b"Q"):
                    with self.lock:
                        self.statements += 1
                buf = buf[1 + size :]
            dst.sendall(data)

    def _down(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := src.recv(65536):
                state["answered"] = True
                dst.sendall(data)
        except OSError:
            pass
        dst.close()


def count_per_command(ring: Keyring, seconds: float) -> dict[str, tuple[float, float]]:
    u = urlparse(PG)
    proxy = WireCounter(u.hostname or "127.0.0.1", u.port or 5432)
    url = PG.replace(f"{u.hostname}:{u.port or 5432}", f"127.0.0.1:{proxy.port}")
    out = {}
    for name, game in (("red dog", red_dog_round), ("jb 4-line", jb_round)):
        with casino(ring, url) as app:
            _, _, commands = play(app, game, seconds, proxy.reset)
            with proxy.lock:
                statements, trips = proxy.statements, proxy.round_trips
            batches = getattr(app, "batches", 0)  # the code before group commit has none
            if batches:
                print(
                    f"  ({name}: {getattr(app, 'batched_commands', 0) / batches:.1f} "
                    f"commands per transaction on average, set-up included)"
                )
        out[name] = (statements / commands, trips / commands)
    return out


# -- plumbing -------------------------------------------------------------------------------


def new_schema() -> str:
    schema = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema


def drop_schema(schema: str) -> None:
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


class casino:
    def __init__(self, ring: Keyring, url: str = PG) -> None:
        self.ring, self.url = ring, url

    def __enter__(self) -> Casino:
        self.schema = new_schema()
        self.dir = tempfile.TemporaryDirectory()
        sep = "&" if "?" in self.url else "?"
        settings = Settings(
            data_dir=Path(self.dir.name), database_url=f"{self.url}{sep}schema={self.schema}"
        )
        os.environ.setdefault("POSTGRES_POOL_SIZE", str(CLIENTS + 10))
        self.app = bootstrap(settings, self.ring)
        return self.app

    def __exit__(self, *exc: Any) -> None:
        self.app.close()
        self.dir.cleanup()
        drop_schema(self.schema)


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):,.0f} (min {min(xs):,.0f}, max {max(xs):,.0f})"


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ring = Keyring.generate()
    load = os.getloadavg()
    print(f"{CLIENTS} clients, {seconds:g} s per run, {repeats} repeats; load {load[0]:.1f}")
    raw: list[float] = []
    figures: dict[str, list[tuple[float, float]]] = {"red dog": [], "jb 4-line": []}
    for rep in range(repeats):
        raw.append(raw_ceiling(seconds))
        for name, game in (("red dog", red_dog_round), ("jb 4-line", jb_round)):
            with casino(ring) as app:
                figures[name].append(play(app, game, seconds)[:2])
        print(
            f"  run {rep + 1}: raw {raw[-1]:,.0f} tx/s; "
            + "; ".join(
                f"{n} {f[-1][0]:,.0f} rounds/s {f[-1][1]:,.0f} commands/s "
                f"({f[-1][1] / raw[-1]:.2f} x raw, CPU {cpu * 1000:.1f} ms per round)"
                for (n, f), cpu in zip(figures.items(), CPU_PER_ROUND[-2:], strict=True)
            )
            + f"; load {os.getloadavg()[0]:.1f}"
        )
    print(f"raw locked transactions/s: {spread(raw)}")
    for name, fs in figures.items():
        ratios = [c / r for (_, c), r in zip(fs, raw, strict=True)]
        print(
            f"{name}: rounds/s {spread([f[0] for f in fs])}; commands/s "
            f"{spread([f[1] for f in fs])}; commands/s / raw: "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        )
    for name, (st, rt) in count_per_command(ring, min(seconds, 3.0)).items():
        print(f"{name}: {st:.2f} SQL statements, {rt:.2f} round trips per command (on the wire)")


if __name__ == "__main__":
    main()
