"""``croupier serve``: the HTTP API in one process, or in N worker processes on PostgreSQL.

With ``--workers N`` uvicorn's supervisor starts N processes sharing one listening socket;
each builds its own application (:func:`worker_app`) from the same environment: its own
``Casino``, store connections, group-commit writer, caches and checkpoint timer. What
keeps them correct on one database (README, "Several workers"): every save is checked at
insert (a stale cached aggregate collides on its version, the batch is re-run from
reloaded state), a request record is an aggregate of its own (the same Idempotency-Key
sent to two workers is one effect), the histories are read from the store, and the
sealer is fenced (:mod:`ledger.sealer_fence`). SQLite is one process: more workers are
refused.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fastapi import FastAPI

from api.app import create_app
from api.auth import load_credentials
from api.metrics import MULTIPROC_ENV
from ledger.runner_lease import SPLIT_NEEDS_POSTGRES
from ledger.settings import Settings

WORKER_APP = "api.serve:worker_app"
# uvicorn's supervisor kills and restarts a worker that does not answer its ping within
# this many seconds (its default, 5, kills busy workers on a loaded 2-core machine: each
# restart drops the worker's connections and pays the start-up again). A hung worker is
# still replaced, later.
WORKER_HEALTHCHECK_SECONDS = 60


def workers_refused(settings: Settings, workers: int) -> str | None:
    """Why ``--workers`` (or a process of a split role: ``CROUPIER_ROLE``) cannot be served
    on this store, or None."""
    if settings.role != "all" and not settings.uses_postgres:
        return SPLIT_NEEDS_POSTGRES.format(role=settings.role)
    if workers < 1:
        return f"--workers {workers}: at least one worker is needed"
    if workers > 1 and not settings.uses_postgres:
        return (
            f"--workers {workers} needs PostgreSQL (set CROUPIER_DATABASE_URL): "
            "on SQLite croupier serve is one process"
        )
    return None


def metrics_dir() -> Path:
    """The directory the worker processes share their metrics in (``api.metrics``): the
    environment's ``PROMETHEUS_MULTIPROC_DIR``, emptied (the library's files of a
    previous run would be added to this one's), else a new temporary one. Set in the
    environment before the workers start, so each one's metrics library sees it."""
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for old in path.glob("*.db"):
            old.unlink()
    else:
        path = Path(tempfile.mkdtemp(prefix="croupier-metrics-"))
        os.environ[MULTIPROC_ENV] = str(path)
    return path


def worker_app() -> FastAPI:
    """The application of one worker process (uvicorn calls it in each worker)."""
    settings = Settings()
    return create_app(settings=settings, credentials=load_credentials(settings))
