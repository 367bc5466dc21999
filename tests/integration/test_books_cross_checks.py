"""Deleting rows that no checkpoint covers yet must not replay money unnoticed (issue 11,
attack 4): every movement names its request, whose record must exist with the same
digest and move money once; every session ledger has its session; a closed session
nets to zero; on SQLite a gap in row ids is a possible deletion."""

from __future__ import annotations

from typing import Any

from audit_cli.rows import read_rows
from audit_cli.verify import Report, verify
from tests.conftest import Store
from tests.integration.test_tamper import Raw, assert_same_in_chunks


def checks(report: Report) -> set[str]:
    return {f.check for f in report.findings}


def run_verify(store: Store) -> Report:
    report = verify(
        read_rows(store.db), store.keyring.public_keys, jobs=1, check_gaps=store.kind == "sqlite"
    )
    for chunk in (2, 3, 5):  # the books summed per chunk in the workers: the same findings
        assert_same_in_chunks(store, chunk)
    return report


def _ids(raw: Raw, where: str, *params: Any) -> list[Any]:
    return [r[0] for r in raw.q(f"SELECT {{id}} FROM {{t}} WHERE {where} ORDER BY {{id}}", *params)]


def test_a_deleted_idempotency_record_and_the_retry_it_allows_are_caught(store: Store) -> None:
    app = store.open()
    app.open_account("o", "dora", "EUR")
    app.deposit("d1", "dora", 5_000)
    app.seal()
    app.deposit("d2", "dora", 1_000)  # not yet covered by a checkpoint
    app.deposit("d3", "dora", 10)
    assert run_verify(store).ok, run_verify(store).findings
    raw = Raw(store)
    try:
        requests = _ids(raw, "topic = ?", "croupier/request/accepted@1")
        raw.q("DELETE FROM {t} WHERE {id} = ?", requests[-2])  # d2's record
    finally:
        raw.close()
    found = checks(run_verify(store))
    assert "books-request" in found
    if store.kind == "sqlite":
        assert "row-gap" in found
    # The attack: the retry credits again (the live ledger cannot know)...
    fresh = store.open()
    assert fresh.deposit("d2", "dora", 1_000).balance == 7_010
    fresh.seal()
    # ...but the log now shows request d2 moving money twice.
    report = run_verify(store)
    assert any(
        f.check == "books-request" and "more than once" in f.message for f in report.findings
    ), report.findings


def _session_log(store: Store) -> str:
    app = store.open()
    app.open_account("o", "sam", "EUR")
    app.deposit("d", "sam", 10_000)
    sid = str(app.open_session("s", "sam", 3_000).session_id)
    for i in range(3):
        r = app.red_dog_bet(f"b{i}", sid, 100)
        if r.status == "open":
            app.red_dog_see(f"s{i}", sid)
    app.close_session("c", sid)
    app.deposit("after", "sam", 1)
    assert run_verify(store).ok, run_verify(store).findings
    return sid


def test_a_deleted_session_leaves_a_ledger_without_its_session(store: Store) -> None:
    sid = _session_log(store)
    raw = Raw(store)
    try:
        oid = sid.replace("-", "") if store.kind == "sqlite" else sid
        deleted = raw.q("SELECT count(*) FROM {t} WHERE originator_id = ?", oid)[0][0]
        assert deleted > 5
        raw.q("DELETE FROM {t} WHERE originator_id = ?", oid)
    finally:
        raw.close()
    report = run_verify(store)
    assert any(
        f.check == "books-session" and "no such session" in f.message for f in report.findings
    ), report.findings


def test_a_closed_session_must_net_to_zero(store: Store) -> None:
    _session_log(store)
    raw = Raw(store)
    try:
        (returned,) = _ids(raw, "topic = ?", "croupier/account/session-returned@1")
        raw.q("DELETE FROM {t} WHERE {id} = ?", returned)
    finally:
        raw.close()
    report = run_verify(store)
    assert any(
        f.check == "books-session" and "still holds" in f.message for f in report.findings
    ), report.findings


def test_every_movement_names_its_request(store: Store) -> None:
    _session_log(store)
    import json

    from ledger import envelope

    movements = [
        json.loads(envelope.decode(r.state).payload)["movement"]
        for r in read_rows(store.db)
        if b'"movement"' in r.state
    ]
    assert len(movements) > 6
    assert all(m["request"]["seq"] >= 1 and len(m["request"]["digest"]) == 64 for m in movements)
