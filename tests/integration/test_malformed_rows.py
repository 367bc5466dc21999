"""Rows in no canonical form (issue 11, attacks 3 and 7): upper-case phantom copies of a
round on SQLite, versions that are not integers ≥ 1, non-UTF-8 topics and huge row ids
are named findings with exit 1 (never a traceback), in bounded memory, and the sealer
refuses to checkpoint over them."""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from audit_cli.rows import read_rows
from audit_cli.rtp import read_groups
from audit_cli.verify import verify, verify_db
from ledger.casino import Casino
from ledger.errors import TamperDetected
from tests.conftest import Store


def _round_log(store: Store) -> Casino:
    app = store.open()
    app.open_account("o", "rita", "EUR")
    app.deposit("d", "rita", 50_000)
    sid = app.open_session("s", "rita", 20_000).session_id
    for i in range(4):
        r = app.red_dog_bet(f"b{i}", sid, 500)
        if r.status == "open":
            app.red_dog_see(f"s{i}", sid)
    app.seal()
    return app


def _lite(store: Store) -> sqlite3.Connection:
    conn = sqlite3.connect(store.data_dir / "casino.sqlite", isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
    return conn


def _cli(store: Store, *extra: str) -> tuple[int, dict[str, Any]]:
    """audit-cli verify in a child process limited to 1 GB of address space."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run(
        [
            *(sys.executable, "-m", "audit_cli.main", "verify", "--db", store.db, "--json"),
            *("--trust-local-keyring", "--keys", str(store.data_dir / "public.json"), *extra),
        ],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=limit,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _checks(doc: dict[str, Any]) -> set[str]:
    return {f["check"] for f in doc["findings"]}


def _upper_case_spellings(oid: str) -> list[str]:
    letters = [i for i, ch in enumerate(oid) if ch.isalpha()]
    if not letters:  # 32 digits: no upper-case spelling exists (about 1 id in 2 million)
        return []
    first, last = letters[0], letters[-1]
    spellings = {
        oid.upper(),
        oid[:first] + oid[first].upper() + oid[first + 1 :],
        oid[:last] + oid[last].upper() + oid[last + 1 :],
    }
    spellings.discard(oid)
    return sorted(spellings)


def test_upper_case_copies_of_a_round_are_findings_not_new_rounds(sqlite_store: Store) -> None:
    store = sqlite_store
    app = _round_log(store)
    before = read_groups(store.db)
    conn = _lite(store)
    round_ids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT originator_id FROM stored_events WHERE topic LIKE 'croupier/round/%'"
        )
    ]
    (round_rows,) = conn.execute(
        "SELECT count(*) FROM stored_events WHERE topic LIKE 'croupier/round/%'"
    ).fetchone()
    assert round_ids and round_rows > len(round_ids)
    copied = 0
    for oid in round_ids:
        # every spelling differs from the id: a half of all digits has no upper case
        # (a random id's first 16 characters were all digits once in CI), so the
        # spellings are the whole id and its first and its last letter upper-cased
        for copy in _upper_case_spellings(oid):
            conn.execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                "SELECT ?, originator_version, topic, state FROM stored_events "
                "WHERE originator_id = ? ORDER BY originator_version",
                (copy, oid),
            )
            (rows,) = conn.execute(
                "SELECT count(*) FROM stored_events WHERE originator_id = ?", (oid,)
            ).fetchone()
            copied += rows
    conn.close()
    assert copied > 0
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    phantom = [f for f in report.findings if f.check == "row-originator-id"]
    assert len(phantom) == copied  # every copied row, named
    (store.data_dir / "public.json").write_text(json.dumps(store.keyring.public_document()))
    code, doc = _cli(store)
    assert code == 1 and "row-originator-id" in _checks(doc)
    # The reports do not count the copies: the observed RTP is unchanged.
    assert read_groups(store.db) == before
    # The sealer never checkpoints them.
    with pytest.raises(TamperDetected, match="non-canonical"):
        app.seal()


@pytest.mark.parametrize(
    ("column", "value", "check"),
    [
        ("originator_version", -1, "row-version"),
        ("originator_version", "abc", "row-version"),
        ("originator_version", 1.5, "row-version"),
        ("topic", b"croupier/\xff\xfe/x@1", "row-topic"),
        ("rowid", 2**62, "row-id"),
    ],
)
def test_each_malformed_row_kind_is_a_named_finding_in_bounded_memory(
    sqlite_store: Store, column: str, value: Any, check: str
) -> None:
    store = sqlite_store
    app = _round_log(store)
    app.deposit("late", "rita", 5)
    conn = _lite(store)
    (n,) = conn.execute(
        "SELECT max(rowid) FROM stored_events WHERE topic = 'croupier/account/deposited@1'"
    ).fetchone()
    if column == "topic":
        conn.execute("UPDATE stored_events SET topic = CAST(? AS TEXT) WHERE rowid = ?", (value, n))
    else:
        conn.execute(f"UPDATE stored_events SET {column} = ? WHERE rowid = ?", (value, n))
    conn.close()
    (store.data_dir / "public.json").write_text(json.dumps(store.keyring.public_document()))
    for jobs in ("1", "2"):
        code, doc = _cli(store, "--jobs", jobs)
        assert code == 1, doc
        assert check in _checks(doc), doc["findings"]
    report = verify_db(store.db, store.keyring.public_keys, jobs=2)
    assert check in {f.check for f in report.findings}
    # A sealer that did not write the row reads it and refuses it (the timer logs it).
    with pytest.raises(Exception) as refused:
        store.open().seal()
    assert not isinstance(refused.value, AssertionError)
    if column == "rowid":  # the row moved: the writer's own sealer reads it and refuses it
        with pytest.raises(Exception) as refused:
            app.seal()
        assert not isinstance(refused.value, AssertionError)
        return
    # The writer's sealer covers the row as it wrote it (ledger.written): the changed row
    # then fails that checkpoint as well.
    assert app.seal() is not None
    after = verify_db(store.db, store.keyring.public_keys, jobs=2)
    assert {check, "checkpoint-root"} <= {f.check for f in after.findings}
