"""The group commit's staleness check (``any_newer``) on PostgreSQL reads a few index
entries whatever the log's size.

Written as a join, the planner answered it by a hash join over a sequential scan of the
whole events table (17 ms a call at 300,000 events, every batch that held an aggregate read
from the cache, growing with the log). Each aggregate is now probed on its own through the
primary key (``LATERAL ... LIMIT 1``): the plan, generic or custom, never scans the table.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import pytest
from psycopg.sql import SQL

from tests.conftest import Store

pytestmark = pytest.mark.postgres


def scanned(plan: Any) -> list[str]:
    """The relations a plan reads by sequential scan."""
    found = [plan["Relation Name"]] if plan.get("Node Type") == "Seq Scan" else []
    for child in plan.get("Plans", ()):
        found += scanned(child)
    return found


@pytest.mark.parametrize("mode", ["force_custom_plan", "force_generic_plan"])
@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_any_newer_never_scans_the_events_table(store: Store, mode: str) -> None:
    app = store.open()
    app.open_account("ria-open", "ria", "EUR")
    app.deposit("ria-dep", "ria", 700)
    recorder: Any = app.recorder
    conn = store.connect()  # type: ignore[no-untyped-call]
    try:
        # A log of 60,000 events, most of them of a few long-lived aggregates (sessions,
        # the house's accounts), as a served log is: then a join's estimate says a match
        # comes soon, and the planner scans. Rows no reader verifies: the schema is dropped.
        conn.execute(
            f"INSERT INTO {store.table} (originator_id, originator_version, topic, state) "
            "SELECT a, v, 'x', '\\x00'::bytea FROM "
            "(SELECT gen_random_uuid() AS a FROM generate_series(1, 20)) AS aggregates, "
            "generate_series(1, 3000) AS v"
        )
        conn.execute(f"ANALYZE {store.table}")
        conn.execute(f"SET plan_cache_mode = {mode}")
        ids = [uuid4() for _ in range(8)]
        [(plan,)] = conn.execute(
            SQL("EXPLAIN (FORMAT JSON) ") + recorder._any_newer_statement, (ids, [1] * 8)
        ).fetchall()
        plan = plan if isinstance(plan, list) else json.loads(plan)
        events = store.table.rsplit(".", 1)[-1]
        assert events not in scanned(plan[0]["Plan"]), json.dumps(plan, indent=1)
    finally:
        conn.close()
    # And it answers as before: nothing after an aggregate's last version, something after
    # an earlier one (chunks of any size).
    conn = store.connect()  # type: ignore[no-untyped-call]
    try:
        oid, last = conn.execute(
            f"SELECT originator_id, max(originator_version) FROM {store.table} "
            "WHERE topic <> 'x' GROUP BY 1 HAVING max(originator_version) > 1 LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    others = [(uuid4(), 1) for _ in range(500)]
    assert not recorder.any_newer([*others, (oid, last)])
    assert recorder.any_newer([*others, (oid, last - 1)])
