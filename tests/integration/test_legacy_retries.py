"""A request recorded by older code, retried now, answers exactly what it first did.

The request records of the legacy logs (``tests/fixtures/legacy_log_v1``, written at commit
bcf9fd5, and ``tests/fixtures/legacy-v01``) hold each answer as the old handlers' JSON
object. A retry reads it back as its command's result type (:mod:`ledger.results`): every
recorded field is kept as recorded, a field added since reads as None, and nothing moves.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import commands as c
from ledger import contracts
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.requests import Request
from ledger.results import wire_of
from ledger.settings import Settings

FIXTURES = Path(__file__).parent.parent / "fixtures"
V1 = json.loads((FIXTURES / "legacy_log_v1" / "expected.json").read_text())


@pytest.fixture
def legacy(tmp_path: Path) -> Iterator[dict[str, Casino]]:
    """Each legacy log, copied and opened with the current code."""
    apps = {}
    for name in ("legacy_log_v1", "legacy-v01"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
        apps[name] = bootstrap(Settings(data_dir=tmp_path / name))
    try:
        yield apps
    finally:
        for app in apps.values():
            app.close()


def _records(app: Casino) -> list[Request]:
    found = app.recorder.select_notifications(
        start=1, limit=10_000, topics=[contracts.REQUEST_ACCEPTED]
    )
    records = [app.find(Request, n.originator_id) for n in found]
    return [r for r in records if r is not None]


def _as_recorded(answer: Any, recorded: dict[str, Any]) -> None:
    """The answer's wire form is the record: the same value under every recorded key, and
    None under a key added since."""
    wire = wire_of(answer)
    assert {k: wire.get(k, "<missing>") for k in recorded} == recorded
    assert {k: v for k, v in wire.items() if k not in recorded and v is not None} == {}


@pytest.mark.parametrize("name", ["legacy_log_v1", "legacy-v01"])
def test_every_answer_recorded_in_a_legacy_log_reads_back_as_its_commands_result(
    legacy: dict[str, Casino], name: str
) -> None:
    app = legacy[name]
    kinds = {kind.name: kind for kind in app.handlers}
    records = _records(app)
    assert len(records) >= 6
    for record in records:
        _as_recorded(kinds[record.command].answer_from(record.result), record.result)


def test_retried_legacy_requests_answer_what_they_first_did_and_move_nothing(
    legacy: dict[str, Casino],
) -> None:
    app = legacy["legacy_log_v1"]
    recorded = {r.request_id: r.result for r in _records(app)}
    balance = app.account_balance("alice")
    retries: list[tuple[str, c.Command[Any]]] = [
        ("acc", c.OpenAccount("alice", "EUR")),
        ("dep-1", c.Deposit("alice", 20_000)),
        ("dep-2", c.Deposit("alice", 5_000)),
        ("wd-1", c.Withdraw("alice", 1_000)),
        ("s1", c.OpenSession("alice", 10_000)),
        ("void-1", c.VoidRound(V1["rounds"]["voided"]["code"], "display fault", "INC-1")),
        ("close-1", c.CloseSession(V1["closed_session"])),
        ("s2", c.OpenSession("alice", 500)),
    ]
    for request_id, cmd in retries:
        _as_recorded(app.command(request_id, cmd), recorded[request_id])
    assert app.account_balance("alice") == balance == V1["account_balance"]
    assert app.session_balance(V1["open_session"]) == V1["open_session_balance"]

    old = legacy["legacy-v01"]
    recorded = {r.request_id: r.result for r in _records(old)}
    assert old.deposit("l2", "lena", 20_000).balance == recorded["l2"]["balance"] == 20_000
    assert old.withdraw("l6", "lena", 1_000).balance == recorded["l6"]["balance"] == 14_000
    assert old.account_balance("lena") == 19_000  # after the session's close, as recorded
