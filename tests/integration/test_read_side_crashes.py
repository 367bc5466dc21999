"""The read side after a SIGKILL and under two writing workers (issue 25): every view
equals a rebuild from the log afterwards, and nothing was applied twice.

A worker process (:mod:`tests.integration.readside_worker`) writes commands while its
views follow the log, and dies by SIGKILL: from the parent at a random moment while it
serves (its view batches linger inside their transactions), or by its own hand inside a
view's batch, after the batch's rows are written and before its tracking record and
COMMIT. Then a new application on the store checks every view against the signed log at
the position it had kept, catches up, checks again, and holds every row equal to the
rows a rebuild from the log writes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.checkpoints import feed_opened
from ledger.settings import Settings
from ledger.statement import StatementBook, statements
from tests.conftest import Store

REPO = Path(__file__).resolve().parents[2]


def start_worker(
    tmp: Path, data_dir: Path, url: str | None, **config: Any
) -> subprocess.Popen[str]:
    path = tmp / f"worker-{config['prefix']}.json"
    path.write_text(json.dumps({"data_dir": str(data_dir), "database_url": url, **config}))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.readside_worker", str(path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def every_row(app: Casino) -> dict[str, dict[str, list[dict[str, Any]]]]:
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name, p in app.readside.projections.items():
        with p.view.transaction(commit=False) as c:
            out[name] = {
                t.name: sorted(p.view.select(c, t), key=lambda r: json.dumps(r, sort_keys=True))
                for t in p.view.tables
            }
    return out


def assert_views_equal_a_rebuild(app: Casino) -> None:
    for p in app.readside.projections.values():
        kept = p.position()
        assert p.check().differences == [], p.name  # the rows kept at the kept position
        assert p.catch_up() >= kept
        assert p.check().differences == [], p.name
    caught_up = every_row(app)
    for p in app.readside.projections.values():
        p.rebuild()
    assert every_row(app) == caught_up
    book = StatementBook()
    feed_opened(app, 0, book.feed_payload)
    for player in set(book._lines):
        assert statements(app).lines(player) == book.lines(player)  # nothing applied twice


def open_app(data_dir: Path, url: str | None) -> Casino:
    return bootstrap(Settings(data_dir=data_dir, database_url=url))


@pytest.mark.parametrize("crash_at", [1, 4])
def test_a_kill_inside_a_view_batch_leaves_the_views_equal_to_a_rebuild(
    store: Store, tmp_path: Path, crash_at: int
) -> None:
    data_dir = tmp_path / "data"
    worker = start_worker(
        tmp_path,
        data_dir,
        store.database_url,
        prefix="k",
        rounds=6,
        mode="crash-in-batch",
        crash_at=crash_at,
    )
    out, _ = worker.communicate(timeout=300)
    assert worker.returncode == -signal.SIGKILL, out
    app = open_app(data_dir, store.database_url)
    try:
        statement = app.readside["statement"]
        assert statement.position() < (app.recorder.max_notification_id() or 0)  # batch gone
        assert_views_equal_a_rebuild(app)
    finally:
        app.close()


@pytest.mark.parametrize("crash_at", [3, 12])
def test_a_kill_inside_a_commits_fold_loses_the_command_and_its_rows_together(
    store: Store, tmp_path: Path, crash_at: int
) -> None:
    data_dir = tmp_path / "data"
    worker = start_worker(
        tmp_path,
        data_dir,
        store.database_url,
        prefix="c",
        rounds=6,
        mode="crash-in-commit",
        crash_at=crash_at,
    )
    out, _ = worker.communicate(timeout=300)
    assert worker.returncode == -signal.SIGKILL, out
    app = open_app(data_dir, store.database_url)
    try:
        head = app.recorder.max_notification_id()
        # every command that was answered had its events folded in its transaction; the
        # one killed left neither its events nor its rows
        assert {p.position() for p in app.readside.projections.values()} == {head}
        assert_views_equal_a_rebuild(app)
    finally:
        app.close()


def test_a_serving_process_killed_at_random_leaves_the_views_equal_to_a_rebuild(
    store: Store, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    rng = random.Random()
    for attempt in range(3):  # three kills, each at a random moment, on the same store
        worker = start_worker(
            tmp_path,
            data_dir,
            store.database_url,
            prefix=f"s{attempt}-",
            rounds=40,
            mode="serve",
        )
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=60)
        assert worker.returncode == -signal.SIGKILL
    app = open_app(data_dir, store.database_url)
    try:
        assert_views_equal_a_rebuild(app)
    finally:
        app.close()


@pytest.mark.postgres
def test_two_workers_writing_while_the_views_follow_equal_a_rebuild(
    tmp_path: Path,
) -> None:
    from tests.conftest import _make_store

    stores = _make_store("postgres", tmp_path)
    store = next(stores)
    try:
        data_dir = tmp_path / "data"
        first = open_app(data_dir, store.database_url)  # the genesis and keys, shared
        first.close()
        workers = [  # the second leaves its events to the others (the first's commits,
            # the runners): the fold at commit then reads another writer's events
            start_worker(
                tmp_path,
                data_dir,
                store.database_url,
                prefix=f"w{n}-",
                rounds=25,
                mode="serve",
                fold_at_commit=n == 0,
            )
            for n in range(2)
        ]
        app = open_app(data_dir, store.database_url)
        try:
            while any(w.poll() is None for w in workers):
                app.readside.catch_up()  # a third follower, in this process
                time.sleep(0.01)
            for w in workers:
                out, _ = w.communicate(timeout=60)
                assert w.returncode == 0 and out.split() == ["ready", "done"], out
            assert_views_equal_a_rebuild(app)
            players = {r["player"] for r in every_row(app)["statement"]["players"]}
            assert players == {f"w{n}-{p}" for n in range(2) for p in range(3)}
        finally:
            app.close()
    finally:
        next(stores, None)
