"""Benchmark: ``audit-cli verify`` throughput over a log of N events (default 200,000).

Builds a SQLite log of N genuinely signed, chained events (deposits spread over many
accounts, in the ledger's envelope format, with a signed checkpoint over all of them),
then measures in the same run:
  - the raw Ed25519 verify rate on one core (cryptography/OpenSSL), and of one process
    per core running at once (what the cores deliver together),
  - full ``verify`` with a pinned genesis key (rows' form, signatures, key history,
    chains, Merkle root, books with the request cross-check) on 1 core and on all cores.
Prints events/s and the ratios to the raw rate x cores used and to the rate of all cores
at once.

    python bench/bench_verify.py [N]

With ``--reexec`` it measures what re-execution (``audit_cli.reexec``, issue 22) costs:
the log is N events of real rounds (Red Dog, Jacks or Better 4-line and multi-hand, 16
players at once through the ledger's commands, group commit), and ``verify`` runs on all
cores with and without re-execution, alternately, ``--repeat`` times (default 3). It
prints events/s of each run, the medians, their ratio and the spread, then the verify
parent's peak memory (tracemalloc) on a log a quarter that size and on the full one, and
records the run with ``bench/record.py`` (the docs' benchmark table is generated from it).

    python bench/bench_verify.py 200000 --reexec [--repeat 3]

With ``--formats`` it builds the same log twice, a signature an event (format 2, as
servers wrote before 2026-12-05) and a signature for each run of 16 events (format 3),
verifies each on all cores alternately ``--repeat`` times (default 3), prints events/s
of each run and the ratio, and records it (format 2 the baseline).

    python bench/bench_verify.py 200000 --formats [--repeat 3]

With ``--memory`` it only measures (and records) that peak, on N and N / 4 events.

    python bench/bench_verify.py 200000 --memory
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from uuid import UUID

from audit_cli.verify import verify_db
from ledger import envelope, merkle
from ledger.keys import Keyring, fingerprint
from ledger.store import SigningEventStore


def build(path: Path, ring: Keyring, n: int, fmt: int = 2) -> None:
    """A log as the server writes it: the genesis, then deposits, each followed by its
    request record (the movement names it), then one checkpoint over all rows. ``fmt``
    2: a signature an event (servers before 2026-12-05); 3: a signature for each run of
    ``SigningEventStore.batch_leaves`` events (the genesis stays format 2, as in the
    server)."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
        "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
    )
    log_id = os.urandom(16)
    key, kid = ring.signing_key, ring.signing_kid
    tree = merkle.IncrementalTree()
    rows: list[tuple[str, int, str, bytes]] = []
    pending: list[envelope.Unsealed] = []
    hashes: list[bytes] = []

    def flush() -> None:
        for e, (state, _) in zip(
            pending, envelope.seal_batch(key, kid, pending, log_id, hashes), strict=True
        ):
            rows.append((UUID(str(e.originator_id)).hex, e.version, e.topic, state))
        pending.clear()
        hashes.clear()

    def add(oid: uuid.UUID, version: int, topic: str, doc: object, prev: bytes) -> bytes:
        nonlocal tree
        payload = json.dumps(doc).encode()
        if fmt == 3 and topic != envelope.GENESIS_TOPIC:
            h = envelope.event_hash_v3(oid, version, topic, payload, prev, kid, log_id)
            pending.append(envelope.Unsealed(oid, version, topic, payload, prev))
            hashes.append(h)
            if len(pending) == SigningEventStore.batch_leaves:
                flush()
        else:
            state, h = envelope.seal(key, kid, oid, version, topic, payload, prev, log_id)
            rows.append((oid.hex, version, topic, state))
        tree = tree.append(merkle.leaf_hash(h))
        return h

    genesis = {
        "log_id": log_id.hex(),
        "kid": kid,
        "public_key": key.public_key().public_bytes_raw().hex(),
        "legacy": None,
    }
    add(envelope.TRUST_ID, 1, envelope.GENESIS_TOPIC, genesis, envelope.GENESIS)
    accounts = [uuid.uuid4() for _ in range(max(1, n // 40))]
    heads: dict[uuid.UUID, tuple[int, bytes, int]] = {}
    topic = "croupier/account/deposited@1"
    for i in range((n - 2) // 2):
        oid = accounts[i % len(accounts)]
        version, prev, balance = heads.get(oid, (0, envelope.GENESIS, 0))
        balance += 100
        rid, digest = uuid.uuid5(oid, str(i)), f"{i:064x}"
        doc = {
            "amount": 100,
            "balance": balance,
            "movement": {
                "source": "bank:EUR",
                "destination": f"account:{oid}",
                "amount": 100,
                "currency": "EUR",
                "request": {"id": str(rid), "digest": digest, "seq": 1},
            },
            "timestamp": {"_type_": "datetime_iso", "_data_": "2026-11-29"},
        }
        h = add(oid, version + 1, topic, doc, prev)
        heads[oid] = (version + 1, h, balance)
        request = {
            "scope": "operator",
            "request_id": str(i),
            "command": "deposit",
            "digest": digest,
            "result": {"balance": balance},
        }
        add(rid, 1, "croupier/request/accepted@1", request, envelope.GENESIS)
    ts, root = 1_795_000_000_000, tree.root()
    sig = key.sign(envelope.tree_head_message(tree.size, root, ts, kid, log_id))
    cp = {
        "seq": 1,
        "tree_size": tree.size,
        "root_hash": root.hex(),
        "timestamp_ms": ts,
        "kid": kid,
        "signature": sig.hex(),
    }
    add(uuid.uuid4(), 1, "croupier/checkpoint/sealed@1", cp, envelope.GENESIS)
    if pending:
        flush()
    conn.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the worker processes)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


RAW_CPU: list[float] = []
"""Raw verifies per CPU second of each raw_rate run (the machine's load aside)."""


def _raw_alone(seconds: float) -> float:
    """One process's raw verify rate (a worker of ``raw_rate_together``)."""
    key = Keyring.generate().signing_key
    pub, msg = key.public_key(), b"x" * 150
    sig = key.sign(msg)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            pub.verify(sig, msg)
        count += 500
    return count / (time.perf_counter() - start)


def raw_rate_together(cores: int, seconds: float = 2.0) -> float:
    """The raw verify rate of ``cores`` processes running at once, summed: what the cores
    deliver together (on a virtual machine two vCPUs may share a physical core, and two
    busy cores may run at a lower clock than one), the ceiling for ``verify`` on them."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(cores) as pool:
        return float(sum(pool.map(_raw_alone, [seconds] * cores)))


def raw_rate(ring: Keyring, seconds: float = 2.0) -> float:
    pub = ring.signing_key.public_key()
    msg = b"x" * 150
    sig = ring.signing_key.sign(msg)
    count, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            pub.verify(sig, msg)
        count += 500
    RAW_CPU.append(count / (time.process_time() - cpu))
    return count / (time.perf_counter() - start)


PLAYERS = 16
"""Players at once while the rounds log is built: their commands share transactions."""


def build_rounds(folder: Path, ring: Keyring, n: int) -> int:
    """About ``n`` events of real rounds: each player plays a Red Dog round (seeing the
    third card when asked), then a Jacks or Better round (4-line and multi-hand in turn,
    the recommended holds, collecting a win), until the log holds ``n`` events."""
    from audit_cli.rows import count_rows
    from ledger.bootstrap import bootstrap
    from ledger.settings import Settings

    app = bootstrap(Settings(data_dir=folder), keyring=ring)
    per_pair = 18  # events a Red Dog and a video-poker round write, with their requests
    pairs = max(1, n // per_pair // PLAYERS)

    def play(k: int) -> None:
        player = f"p{k}"
        app.open_account(f"a{k}", player, "EUR")
        app.deposit(f"d{k}", player, 10**12)
        sid = app.open_session(f"s{k}", player, 10**10).session_id
        for i in range(pairs):
            r = app.red_dog_bet(f"b{k}-{i}", sid, 100)
            if r.status == "open":
                app.red_dog_see(f"see{k}-{i}", sid)
            variant, lines = ("jb-4line", 4) if i % 2 else ("jb-multi", 3)
            dealt = app.vp_deal(f"v{k}-{i}", sid, variant, 10, 5, lines)
            shown = app.vp_act(f"vd{k}-{i}", sid, ["draw", dealt.view["recommended"]])
            if shown.status == "open":
                app.vp_act(f"vc{k}-{i}", sid, ["collect"])
        app.close_session(f"c{k}", sid)

    threads = [threading.Thread(target=play, args=(k,)) for k in range(PLAYERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    app.seal()
    app.close()
    return count_rows(str(folder / "casino.sqlite"))


def peak_kib(db: str, pin: str, reexecute: bool) -> int:
    """The verify parent's peak of Python allocations (tracemalloc), in KiB: what it keeps
    while it joins the workers' results (the workers' own memory is per chunk)."""
    import tracemalloc

    cores = os.cpu_count() or 1
    tracemalloc.start()
    try:
        report = verify_db(db, None, jobs=cores, pin=pin, reexecute=reexecute)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok, report.findings[:3]
    return peak // 1024


def memory(folder: Path, ring: Keyring, pin: str, db: str, n: int) -> dict[str, int]:
    """The parent's peak on a log of ``n // 4`` events and on the full one, with and
    without re-execution: whether what it keeps grows with the log."""
    small = folder / "small"
    small.mkdir()
    small_events = build_rounds(small, ring, n // 4)
    figures = {"small_events": small_events}
    for name, path in (("small", str(small / "casino.sqlite")), ("full", db)):
        for reexecute in (False, True):
            kib = peak_kib(path, pin, reexecute)
            figures[f"peak_kib_{name}_{'with' if reexecute else 'without'}"] = kib
    print(
        "verify parent's peak (tracemalloc) with / without re-execution: "
        f"{figures['peak_kib_small_with']:,} / {figures['peak_kib_small_without']:,} KiB on "
        f"{small_events} events, {figures['peak_kib_full_with']:,} / "
        f"{figures['peak_kib_full_without']:,} KiB on the full log"
    )
    return figures


def bench_memory(n: int) -> None:
    """``--memory``: only the verify parent's peak (see :func:`memory`), recorded."""
    from record import Run

    run = Run("bench_verify", f"re-execution parent memory, {os.cpu_count()} cores")
    ring = Keyring.generate()
    pin = fingerprint(ring.signing_key.public_key())
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as d:
        events = build_rounds(Path(d), ring, n)
        peaks = memory(Path(d), ring, pin, str(Path(d) / "casino.sqlite"), n)
    run.done(
        {"events": events, **{k: v for k, v in peaks.items() if "without" not in k}},
        {
            "what": "the same verify without re-execution (--no-reexecute), same logs",
            **{k: v for k, v in peaks.items() if "without" in k},
        },
    )


def bench_reexec(n: int, repeat: int) -> None:
    from record import Run  # bench/record.py (this script's folder is on sys.path)

    run = Run("bench_verify", f"re-execution, {os.cpu_count()} cores")
    cores = os.cpu_count() or 1
    ring = Keyring.generate()
    pin = fingerprint(ring.signing_key.public_key())
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as d:
        t0 = time.perf_counter()
        events = build_rounds(Path(d), ring, n)
        print(f"built {events} events of rounds in {time.perf_counter() - t0:.1f} s")
        db = str(Path(d) / "casino.sqlite")
        rates: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        counts: dict[str, int] = {}
        for i in range(repeat):
            for reexecute in (False, True) if i % 2 == 0 else (True, False):
                cpu0 = _cpu()
                t0 = time.perf_counter()
                report = verify_db(db, None, jobs=cores, pin=pin, reexecute=reexecute)
                dt = time.perf_counter() - t0
                cpu = _cpu() - cpu0
                assert report.ok and report.trust == "pinned", report.findings[:3]
                rates[reexecute].append(report.events / dt)
                cpus[reexecute].append(report.events / cpu)
                counts = report.rounds or counts
                print(
                    f"run {i + 1} {'with' if reexecute else 'without'} re-execution: "
                    f"{report.events / dt:,.0f} events/s ({dt:.1f} s), "
                    f"{report.events / cpu:,.0f} events per CPU second; load {os.getloadavg()}"
                )
        peaks = memory(Path(d), ring, pin, db, n)
    ratios = [a / b for a, b in zip(rates[True], rates[False], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpus[True], cpus[False], strict=True)]
    with_, without = statistics.median(rates[True]), statistics.median(rates[False])
    print(
        f"verify {events} events on {cores} cores: {with_:,.0f} events/s with re-execution "
        f"(runs {min(rates[True]):,.0f}..{max(rates[True]):,.0f}), {without:,.0f} without "
        f"({min(rates[False]):,.0f}..{max(rates[False]):,.0f}); ratio of the medians "
        f"{with_ / without:.2f} (per run {min(ratios):.2f}..{max(ratios):.2f}); "
        f"{counts.get('rounds_reexecuted', 0)} rounds re-executed"
    )
    cpu_with, cpu_without = statistics.median(cpus[True]), statistics.median(cpus[False])
    print(
        f"events per CPU second (workers and parent; steadier on a loaded machine): "
        f"{cpu_with:,.0f} with, {cpu_without:,.0f} without; ratio {cpu_with / cpu_without:.2f}"
        f" (per run {min(cpu_ratios):.2f}..{max(cpu_ratios):.2f})"
    )
    run.done(
        {
            "events": events,
            "rounds_reexecuted": counts.get("rounds_reexecuted", 0),
            "runs": repeat,
            "events_per_s": round(with_),
            "events_per_s_min": round(min(rates[True])),
            "events_per_s_max": round(max(rates[True])),
            "ratio_to_baseline": round(with_ / without, 3),
            "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3),
            "events_per_cpu_s": round(cpu_with),
            "cpu_ratio_to_baseline": round(cpu_with / cpu_without, 3),
            "cpu_ratio_min": round(min(cpu_ratios), 3),
            "cpu_ratio_max": round(max(cpu_ratios), 3),
            **{k: v for k, v in peaks.items() if "without" not in k},
        },
        {
            "what": "the same verify without re-execution (--no-reexecute), same log, same run",
            "events_per_s": round(without),
            "events_per_s_min": round(min(rates[False])),
            "events_per_s_max": round(max(rates[False])),
            "events_per_cpu_s": round(cpu_without),
            **{k: v for k, v in peaks.items() if "without" in k},
        },
    )


def bench_formats(n: int, repeat: int) -> None:
    """The same log of ``n`` events written a signature an event (format 2) and a
    signature a run of 16 (format 3), verified on every core alternately, ``repeat``
    times each; prints and records events/s and the ratio, format 2 the baseline."""
    from record import Run  # bench/record.py (this script's folder is on sys.path)

    cores = os.cpu_count() or 1
    run = Run("bench_verify", f"a signature a run of 16 against one an event, {cores} cores")
    ring = Keyring.generate()
    pin = fingerprint(ring.signing_key.public_key())
    rates: dict[int, list[float]] = {2: [], 3: []}
    cpus: dict[int, list[float]] = {2: [], 3: []}
    with tempfile.TemporaryDirectory() as d:
        paths = {fmt: Path(d) / f"format{fmt}.sqlite" for fmt in (2, 3)}
        for fmt, path in paths.items():
            build(path, ring, n, fmt)
        for _ in range(repeat):
            for fmt, path in paths.items():
                cpu0, t0 = _cpu(), time.perf_counter()
                report = verify_db(str(path), None, jobs=cores, pin=pin)
                dt, cpu = time.perf_counter() - t0, _cpu() - cpu0
                assert report.ok and report.trust == "pinned", report.findings[:3]
                rates[fmt].append(report.events / dt)
                cpus[fmt].append(report.events / cpu)
                print(
                    f"format {fmt}: {report.events} events in {dt:.2f} s = "
                    f"{report.events / dt:,.0f} events/s, {report.events / cpu:,.0f} per CPU s"
                )
    med = {fmt: statistics.median(r) for fmt, r in rates.items()}
    ratios = [a / b for a, b in zip(rates[3], rates[2], strict=True)]
    print(
        f"format 3 / format 2, events/s: median {statistics.median(ratios):.2f} "
        f"(runs {', '.join(f'{r:.2f}' for r in ratios)}); format 3 {med[3]:,.0f}, "
        f"format 2 {med[2]:,.0f} events/s on {cores} cores"
    )
    run.done(
        {
            "events": n,
            "runs": repeat,
            "events_per_s": round(med[3]),
            "events_per_s_min": round(min(rates[3])),
            "events_per_s_max": round(max(rates[3])),
            "events_per_cpu_s": round(statistics.median(cpus[3])),
            "ratio_to_baseline": round(statistics.median(ratios), 3),
            "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3),
        },
        baseline={
            "what": "the same log a signature an event (format 2), verified in the same run",
            "events_per_s": round(med[2]),
            "events_per_s_min": round(min(rates[2])),
            "events_per_s_max": round(max(rates[2])),
            "events_per_cpu_s": round(statistics.median(cpus[2])),
        },
    )


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repeat = 3
    if "--repeat" in sys.argv:
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1])
        args = [a for a in args if a != str(repeat)]
    if "--formats" in sys.argv:
        bench_formats(int(args[0]) if args else 200_000, repeat)
        return
    if "--memory" in sys.argv:
        bench_memory(int(args[0]) if args else 200_000)
        return
    if "--reexec" in sys.argv:
        bench_reexec(int(args[0]) if args else 200_000, repeat)
        return
    n = int(args[0]) if args else 200_000
    cores = os.cpu_count() or 1
    ring = Keyring.generate()
    pin = fingerprint(ring.signing_key.public_key())
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "casino.sqlite"
        t0 = time.perf_counter()
        build(path, ring, n)
        print(f"built {n} signed events in {time.perf_counter() - t0:.1f} s")
        # The raw rate drifts with the CPU's clock: measure it before, between and after
        # the verify runs, and compare with the mean of the three.
        raws = [raw_rate(ring)]
        together = [raw_rate_together(cores)]
        results = []
        for jobs in (1, cores):
            cpu0 = _cpu()
            t0 = time.perf_counter()
            report = (
                verify_db(str(path), None, jobs=1, pin=pin)
                if jobs == 1
                else verify_db(str(path), None, jobs=jobs, pin=pin)
            )
            dt = time.perf_counter() - t0
            cpu = _cpu() - cpu0
            assert report.ok and report.trust == "pinned", report.findings[:3]
            results.append((jobs, report.events, dt, cpu))
            raws.append(raw_rate(ring))
            together.append(raw_rate_together(cores))
        raw = sum(raws) / len(raws)
        raw_all = sum(together) / len(together)
        print(
            f"raw Ed25519 verify, 1 core: {raw:,.0f} /s (mean of {len(raws)} runs: "
            + ", ".join(f"{r:,.0f}" for r in raws)
            + f"); x {cores} cores = {raw * cores:,.0f} /s"
        )
        print(
            f"raw Ed25519 verify, {cores} processes at once: {raw_all:,.0f} /s (mean of "
            f"{len(together)} runs: "
            + ", ".join(f"{r:,.0f}" for r in together)
            + f") = {raw_all / raw:.2f} x one core alone"
        )
        raw_cpu = sum(RAW_CPU) / len(RAW_CPU)
        print(f"raw Ed25519 verifies per CPU second: {raw_cpu:,.0f}; load {os.getloadavg()}")
        for jobs, events, dt, cpu in results:
            rate = events / dt
            print(
                f"verify jobs={jobs}: {events} events in {dt:.2f} s = {rate:,.0f} events/s;"
                f" ratio to raw x {jobs} = {rate / (raw * jobs):.2f}; CPU {cpu:.1f} s"
                f" = {cpu / dt:.2f} cores busy (below {jobs} when the machine is loaded);"
                f" events per CPU second {events / cpu:,.0f} = {events / cpu / raw_cpu:.2f}"
                " x raw per CPU second (the share of the work that is Ed25519)"
            )
            if jobs > 1:
                print(
                    f"verify jobs={jobs}: ratio to raw on {jobs} cores at once ="
                    f" {rate / raw_all:.2f}"
                )


if __name__ == "__main__":
    main()
