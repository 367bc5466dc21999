"""``croupier db init``: the PostgreSQL schema made by an owner role, used by a least-
privileged application role.

Run by the role that is to own the schema (``--owner-url``, default
``CROUPIER_DATABASE_URL``), it creates the schema, the composite types, the event table,
its append-only triggers and the insert-lock function, and grants the application role
(``--app-role``, an existing role) only what ``croupier serve`` needs:

- ``USAGE`` on the schema; ``SELECT`` and ``INSERT`` on the event table and on the
  snapshot table (``ledger.snapshots``, append-only too); ``USAGE`` on the event table's
  notification id sequence;
- ``EXECUTE`` on ``croupier_lock_events()``, the owner's SECURITY DEFINER function that
  takes the recorder's EXCLUSIVE insert lock (``LOCK TABLE`` in that mode would need
  UPDATE, DELETE or TRUNCATE);
- ``SELECT``, ``INSERT``, ``UPDATE`` and ``DELETE`` on the read side's view tables and
  their tracking table (:mod:`ledger.readside`): caches of the log the server keeps up to
  date and a rebuild empties, checked against the log by ``croupier projections check``.

The application role owns nothing, so it can neither UPDATE, DELETE or TRUNCATE rows nor
disable or drop the triggers. Then run ``croupier serve`` as that role with
``CROUPIER_CREATE_TABLES=false``.
"""

from __future__ import annotations

from eventsourcing.postgres import PostgresDatastore
from psycopg.sql import SQL, Identifier

from ledger.readside import views
from ledger.settings import APP_NAME, postgres_env
from ledger.snapshots import AppendOnlyPostgresSnapshotRecorder
from ledger.store import LOCK_FUNCTION, AppendOnlyPostgresRecorder, postgres_snapshots

EVENTS_TABLE = f"{APP_NAME}_events"
SNAPSHOTS_TABLE = postgres_snapshots(EVENTS_TABLE)


class DbInitError(Exception):
    """The schema cannot be created or the role does not exist."""


def init_db(owner_url: str, app_role: str) -> dict[str, str]:
    env = postgres_env(owner_url)
    schema = env.get("POSTGRES_SCHEMA", "public")
    datastore = PostgresDatastore(
        env["POSTGRES_DBNAME"],
        env["POSTGRES_HOST"],
        env["POSTGRES_PORT"],
        env["POSTGRES_USER"],
        env["POSTGRES_PASSWORD"],
        schema=schema,
        pool_size=2,  # the schema lock is held on one connection while another creates
    )
    try:
        with datastore.transaction(commit=True) as curs:
            curs.execute(SQL("SELECT 1 FROM pg_roles WHERE rolname = %s"), (app_role,))
            if curs.fetchone() is None:
                raise DbInitError(f"no role {app_role!r}: create it first (CREATE ROLE … LOGIN)")
            curs.execute(SQL("CREATE SCHEMA IF NOT EXISTS {0}").format(Identifier(schema)))
        recorder = AppendOnlyPostgresRecorder(datastore, events_table_name=EVENTS_TABLE)
        recorder.create_table()
        AppendOnlyPostgresSnapshotRecorder(datastore, SNAPSHOTS_TABLE).create_table()
        s, t, role = Identifier(schema), Identifier(EVENTS_TABLE), Identifier(app_role)
        snaps = Identifier(SNAPSHOTS_TABLE)
        seq = Identifier(f"{EVENTS_TABLE}_notification_id_seq")
        with datastore.transaction(commit=True) as curs:
            for statement in (
                SQL("REVOKE ALL ON {s}.{t} FROM {role}"),
                SQL("GRANT USAGE ON SCHEMA {s} TO {role}"),
                SQL("GRANT SELECT, INSERT ON {s}.{t} TO {role}"),
                SQL("GRANT USAGE ON SEQUENCE {s}.{seq} TO {role}"),
                SQL("GRANT EXECUTE ON FUNCTION {s}.{lock}() TO {role}"),
                SQL("REVOKE ALL ON {s}.{snaps} FROM {role}"),
                SQL("GRANT SELECT, INSERT ON {s}.{snaps} TO {role}"),
            ):
                curs.execute(
                    statement.format(
                        s=s, t=t, role=role, seq=seq, lock=Identifier(LOCK_FUNCTION), snaps=snaps
                    )
                )
        # The read side's views (ledger.readside): the application role writes them (they
        # are caches of the log, rebuilt from it), and their tracking table.
        tables = []
        for view in views(datastore, EVENTS_TABLE):
            view.create_tables()
            tables += [*view.table_names.values(), view.tracking_table]
        with datastore.transaction(commit=True) as curs:
            for name in dict.fromkeys(tables):
                schema_name, table_name = name.split(".", 1)
                curs.execute(
                    SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {s}.{t} TO {role}").format(
                        s=Identifier(schema_name), t=Identifier(table_name), role=role
                    )
                )
    finally:
        datastore.close()
    return {"schema": schema, "table": EVENTS_TABLE, "app_role": app_role}
