"""``audit-cli`` pointed at a PostgreSQL schema that holds no croupier log (a wrong
``?schema=`` in ``--db`` or ``CROUPIER_DATABASE_URL``) says so in one line and exits 2,
instead of a psycopg traceback: the auditor's first guess must be the address, not the
tool."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from tests.conftest import PG_URL, require_postgres

PIN = "SHA256:" + "0" * 64


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "--pin", PIN],
        ["round", "IBJ-20990101-000000-XXXXX"],
        ["rtp"],
    ],
    ids=["verify", "round", "rtp"],
)
def test_a_schema_without_the_log_is_one_line_and_exit_2(argv: list[str]) -> None:
    require_postgres()
    schema = "absent_" + uuid.uuid4().hex[:10]
    url = f"{PG_URL}?schema={schema}"
    done = subprocess.run(
        [sys.executable, "-m", "audit_cli.main", *argv],
        env={"CROUPIER_DATABASE_URL": url, "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"no croupier log in schema '{schema}'" in done.stdout + done.stderr
