"""Least-privileged PostgreSQL (issue 11, attack 6): `croupier db init` run by an owner role
creates the schema; `croupier serve`'s role can then insert and read, but can neither
rewrite nor delete rows, nor switch off or drop the append-only triggers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from api.cli import main as croupier
from audit_cli.rows import read_rows
from audit_cli.verify import verify
from ledger.bootstrap import bootstrap
from ledger.keys import Keyring
from ledger.settings import Settings
from tests.conftest import PG_URL, require_postgres

pytestmark = pytest.mark.postgres


@dataclass
class Roles:
    owner: str
    app: str
    schema: str

    def url(self, role: str) -> str:
        base = PG_URL.replace("postgres@", f"{role}@", 1)
        return f"{base}?schema={self.schema}"


@pytest.fixture
def roles() -> Iterator[Roles]:
    require_postgres()
    tag = uuid.uuid4().hex[:10]
    r = Roles(f"cr_owner_{tag}", f"cr_app_{tag}", f"lp_{tag}")
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {r.owner} LOGIN")
        conn.execute(f"CREATE ROLE {r.app} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {conn.info.dbname} TO {r.owner}")
    try:
        yield r
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {r.schema} CASCADE")
            for role in (r.app, r.owner):
                conn.execute(f"DROP OWNED BY {role} CASCADE")
                conn.execute(f"DROP ROLE {role}")


def test_the_application_role_cannot_rewrite_the_log_or_switch_off_its_triggers(
    roles: Roles, tmp_path: Path
) -> None:
    assert (
        croupier(["db", "init", "--app-role", roles.app, "--owner-url", roles.url(roles.owner)])
        == 0
    )
    ring = Keyring.generate()
    settings = Settings(data_dir=tmp_path, database_url=roles.url(roles.app), create_tables=False)
    app = bootstrap(settings, keyring=ring)
    app.open_account("o", "ada", "EUR")
    app.deposit("d", "ada", 1_000)
    app.seal()
    app.close()
    db = roles.url(roles.owner)
    report = verify(read_rows(db), None, jobs=1, pin=_fingerprint(ring))
    assert report.ok, report.findings
    table = f"{roles.schema}.casino_events"
    attacks = [
        f"UPDATE {table} SET topic = 'x'",
        f"DELETE FROM {table}",
        f"TRUNCATE {table}",
        f"ALTER TABLE {table} DISABLE TRIGGER USER",
        f"ALTER TABLE {table} DISABLE TRIGGER ALL",
        f"DROP TRIGGER casino_events_append_only ON {table}",
        f"DROP FUNCTION {roles.schema}.croupier_append_only() CASCADE",
        f"DROP TABLE {table}",
        "SET session_replication_role = replica",
        f"ALTER TABLE {table} OWNER TO {roles.app}",
    ]
    refused = []
    for sql in attacks:
        with psycopg.connect(PG_URL.replace("postgres@", f"{roles.app}@", 1), autocommit=True) as c:
            try:
                c.execute(sql)
            except psycopg.Error as e:
                refused.append((sql, type(e).__name__))
    assert [sql for sql, _ in refused] == attacks, "the app role could run some of them"
    assert all(name == "InsufficientPrivilege" for _, name in refused), refused
    assert verify(read_rows(db), None, jobs=1, pin=_fingerprint(ring)).ok  # nothing changed


def test_the_application_role_writes_snapshots_but_cannot_rewrite_them(
    roles: Roles, tmp_path: Path
) -> None:
    assert (
        croupier(["db", "init", "--app-role", roles.app, "--owner-url", roles.url(roles.owner)])
        == 0
    )
    settings = Settings(
        data_dir=tmp_path, database_url=roles.url(roles.app), create_tables=False, snapshot_every=1
    )
    app = bootstrap(settings, keyring=Keyring.generate())
    app.open_account("o", "ada", "EUR")
    app.deposit("d", "ada", 1_000)
    assert app.snapshotter is not None and app.snapshotter.taken == 2
    app.close()
    table = f"{roles.schema}.casino_snapshots"
    refused = []
    for sql in (f"UPDATE {table} SET topic = 'x'", f"DELETE FROM {table}", f"TRUNCATE {table}"):
        with psycopg.connect(PG_URL.replace("postgres@", f"{roles.app}@", 1), autocommit=True) as c:
            try:
                c.execute(sql)
            except psycopg.Error as e:
                refused.append(type(e).__name__)
    assert refused == ["InsufficientPrivilege"] * 3
    with psycopg.connect(PG_URL, autocommit=True) as c:
        assert c.execute(f"SELECT count(*) FROM {table}").fetchone() == (2,)


def test_without_db_init_the_application_role_cannot_start(roles: Roles, tmp_path: Path) -> None:
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {roles.schema} AUTHORIZATION {roles.owner}")
    settings = Settings(data_dir=tmp_path, database_url=roles.url(roles.app), create_tables=False)
    with pytest.raises(Exception, match=r"permission denied|does not exist"):
        bootstrap(settings, keyring=Keyring.generate())


def _fingerprint(ring: Keyring) -> str:
    from ledger.keys import fingerprint

    return fingerprint(ring.signing_key.public_key())
