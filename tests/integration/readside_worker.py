"""A worker process for the read side's crash and concurrency tests: it writes commands
(accounts, deposits, sessions, Red Dog rounds, closes) for its players while its views
follow the log, and may die by SIGKILL in the middle of a view's batch.

``python -m tests.integration.readside_worker CONFIG.json``; the config names the data
directory, the database URL (or null: SQLite), the players' prefix, the rounds per
player, and the mode:

- ``serve``: the background runner follows the log (as ``croupier serve``'s does) while
  the commands are written; every view batch lingers a little inside its transaction (so a
  SIGKILL from the parent at a random time likely lands in one); prints ``ready`` once
  it has written some commands, then keeps writing until killed or done;
- ``crash-in-batch``: writes everything without folding it at commit, then catches the
  views up in small batches and SIGKILLs itself inside the ``crash_at``-th batch, after
  its rows are written and before its tracking record and COMMIT;
- ``crash-in-commit``: writes commands, their events folded into the views in their own
  transactions (:mod:`ledger.readside.commits`), and SIGKILLs itself inside the
  ``crash_at``-th such fold, after the events, the view rows and the tracking rows are
  written (:meth:`ledger.readside.view.View.write_together`) and before the COMMIT.

``fold_at_commit: false`` turns the fold at commit off (a writer that leaves the views to
the runners).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.readside import projection, view
from ledger.readside.runner import Runner
from ledger.settings import Settings


def play(app: Casino, prefix: str, rounds: int, ready: bool) -> None:
    for p in range(3):
        player = f"{prefix}{p}"
        app.open_account(f"{player}-open", player, "EUR")
        app.deposit(f"{player}-dep", player, 100_000)
    for p in range(3):
        player = f"{prefix}{p}"
        sid = app.open_session(f"{player}-buy", player, 20_000).session_id
        for n in range(rounds):
            r = app.red_dog_bet(f"{player}-bet-{n}", sid, 100)
            if r.status == "open":
                app.red_dog_see(f"{player}-see-{n}", sid)
            if ready and p == 0 and n == 2:
                print("ready", flush=True)
        app.close_session(f"{player}-close", sid)
        app.withdraw(f"{player}-wd", player, 1_000)


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    settings = Settings(data_dir=Path(config["data_dir"]), database_url=config["database_url"])
    app = bootstrap(settings)
    mode = config["mode"]
    assert app.readside.commits is not None
    app.readside.commits.enabled = config.get("fold_at_commit", True)
    real_track, real_together = view.View.track, view.View.write_together
    if mode == "serve":
        projection.BATCH = 20

        def slow_track(self: view.View, c: object, position: int) -> None:
            time.sleep(0.004)  # rows written, tracking not yet: a kill here is mid-batch
            real_track(self, c, position)

        def slow_together(self: view.View, c: Any, parts: Any, position: int) -> None:
            real_together(self, c, parts, position)
            time.sleep(0.004)  # events, rows and tracking written, not committed: mid-command

        view.View.track = slow_track  # type: ignore[method-assign]
        view.View.write_together = slow_together  # type: ignore[method-assign]
        runner = Runner(app.readside, poll=0.05)
        runner.start()
        play(app, config["prefix"], config["rounds"], ready=True)
        runner.stop()
        app.close()
        print("done", flush=True)
        return
    calls = 0
    if mode == "crash-in-commit":

        def write_then_die(self: view.View, c: Any, parts: Any, position: int) -> None:
            nonlocal calls
            real_together(self, c, parts, position)
            calls += 1
            if calls == config["crash_at"]:
                if self.postgres:  # the pipeline sent: the rows are in the open transaction
                    with c.connection.pipeline() as pipeline:
                        pipeline.sync()
                os.kill(os.getpid(), signal.SIGKILL)

        view.View.write_together = write_then_die  # type: ignore[method-assign]
        play(app, config["prefix"], config["rounds"], ready=False)
        print("not killed", flush=True)
        return
    app.readside.commits.enabled = False  # the views left behind, for the batches below
    play(app, config["prefix"], config["rounds"], ready=False)
    projection.BATCH = config.get("batch", 25)

    def track_then_die(self: view.View, c: object, position: int) -> None:
        nonlocal calls
        calls += 1
        if calls == config["crash_at"]:
            os.kill(os.getpid(), signal.SIGKILL)
        real_track(self, c, position)

    view.View.track = track_then_die  # type: ignore[method-assign]
    app.readside.catch_up()
    print("not killed", flush=True)


if __name__ == "__main__":
    main()
