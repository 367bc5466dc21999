"""``audit-cli round`` checks every event of a round: a change to any recorded view,
decision or amount, re-signed with the real key or not, is reported naming the event."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from audit_cli.round_check import RoundReport
from audit_cli.rounds import check_round, round_rows
from ledger import envelope
from ledger.casino import Casino
from tests.conftest import Seeded, Store

SEED = bytes(range(32))
Mutate = Callable[[dict[str, Any]], None]


def play_4line(app: Casino) -> str:
    """A 4-line round with a draw (and a collect when it wins): started, acted…, settled."""
    app.open_account("o", "alice", "EUR")
    app.deposit("d", "alice", 100_000)
    sid = app.open_session("s", "alice", 50_000).session_id
    dealt = app.vp_deal("deal", sid, "jb-4line", 10, 5, 4)
    shown = app.vp_act("draw", sid, ["draw", dealt.view["recommended"]])
    if shown.status == "open":
        shown = app.vp_act("collect", sid, ["collect"])
    assert shown.status == "settled"
    return str(shown.code)


@pytest.fixture
def code(seeded: Seeded) -> str:
    app = seeded(SEED)
    code = play_4line(app)
    app.close()
    return code


def check(store: Store, code: str) -> RoundReport:
    return check_round(store.db, code, store.keyring.public_keys)


def tamper(store: Store, code: str, step: str, mutate: Mutate, *, resign: bool) -> int:
    """Edit the first ``step`` event of the round in place; re-sign it with the real key
    (a compromised writer) or leave the old signature (an edit of the database)."""
    row = next(r for r in round_rows(store.db, code) if r.topic.endswith(f"/{step}@1"))
    env = envelope.decode(row.state)
    doc = json.loads(env.payload)
    mutate(doc)
    payload = json.dumps(doc, separators=(",", ":")).encode()
    if resign:
        state, _ = envelope.seal(
            store.keyring.signing_key,
            store.keyring.signing_kid,
            row.originator_id,
            row.version,
            row.topic,
            payload,
            env.prev_hash,
        )
    else:
        state = envelope.encode(envelope.Envelope(env.kid, env.prev_hash, env.signature, payload))
    conn = store.connect()
    try:
        if store.kind == "sqlite":
            conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
            conn.execute(
                f"UPDATE {store.table} SET state = ? WHERE rowid = ?", (state, row.notification_id)
            )
        else:
            conn.execute("SET session_replication_role = replica")
            conn.execute(
                f"UPDATE {store.table} SET state = %s WHERE notification_id = %s",
                (state, row.notification_id),
            )
    finally:
        conn.close()
    return row.version


def other_suit(card: str) -> str:
    """Js -> Jh: the same rank in another suit (cards are rank + suit letter)."""
    suits = "shdc"
    return card[:-1] + suits[(suits.index(card[-1]) + 1) % 4]


def change_first_line_card(doc: dict[str, Any]) -> None:
    line = doc["view"]["lines"][0]
    line["cards"][0] = other_suit(line["cards"][0])


def change_holds(doc: dict[str, Any]) -> None:
    holds = doc["decision"][1]
    doc["decision"][1] = [0, 1, 2, 3, 4] if holds != [0, 1, 2, 3, 4] else []


def raise_payout(doc: dict[str, Any]) -> None:
    doc["payout"] += 1_000


def found(report: RoundReport, step: str, version: int) -> set[str]:
    return {f.field for f in report.findings if f.step == step and f.version == version}


def test_an_untouched_round_passes_every_check(store: Store, code: str) -> None:
    report = check(store, code)
    assert report.ok, report.problems
    assert report.status == "settled" and report.signatures_checked and report.rederived


@pytest.mark.parametrize("resign", [True, False], ids=["re-signed", "not-re-signed"])
@pytest.mark.parametrize(
    ("step", "mutate", "fields"),
    [
        ("settled", change_first_line_card, {"view"}),
        ("acted", change_first_line_card, {"view"}),
        ("acted", change_holds, {"view", "decision"}),
        ("settled", raise_payout, {"payout"}),
    ],
    ids=["settled-view", "acted-view", "decision", "amount"],
)
def test_a_changed_event_is_reported_naming_the_event_and_the_field(
    store: Store, code: str, step: str, mutate: Mutate, fields: set[str], resign: bool
) -> None:
    version = tamper(store, code, step, mutate, resign=resign)
    report = check(store, code)
    assert not report.ok
    named = found(report, step, version)
    assert named & fields, report.problems
    # Without the writer's key the old signature no longer covers the bytes.
    assert ("signature" in named) is (not resign), report.problems
    assert any(f"{step} event (v{version})" in p for p in report.problems)


def test_a_re_signed_earlier_event_also_breaks_the_next_events_chain_link(
    store: Store, code: str
) -> None:
    version = tamper(store, code, "acted", change_first_line_card, resign=True)
    report = check(store, code)
    assert "chain-link" in {f.field for f in report.findings if f.version == version + 1}


def test_cli_round_names_the_tampered_settled_event_and_exits_1(
    store: Store, code: str, tmp_path: Any
) -> None:
    keys = tmp_path / "public-keys.json"
    keys.write_text(json.dumps(store.keyring.public_document()))

    def run() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "audit_cli.main", "round", code]
        return subprocess.run(
            [*command, "--db", store.db, "--keys", str(keys)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        )

    good = run()
    assert good.returncode == 0, good.stdout + good.stderr
    assert "is signed and chained" in good.stdout
    version = tamper(store, code, "settled", change_first_line_card, resign=True)
    bad = run()
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"settled event (v{version}) view" in bad.stdout


def test_the_servers_check_reports_a_tampered_round_event_by_event(store: Store, code: str) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.auth import Credentials

    creds = Credentials(
        "op-token-0123456789abcdef", "aud-token-0123456789abcdef", b"k" * 32, "", ""
    )
    auth = {"Authorization": "Bearer aud-token-0123456789abcdef"}
    app = store.open()
    with TestClient(create_app(app, credentials=creds)) as client:
        good = client.get(f"/v1/rounds/{code}/check", headers=auth).json()
        assert good["ok"] and good["rederived"] and good["signatures_checked"]
        version = tamper(store, code, "settled", change_first_line_card, resign=False)
        bad = client.get(f"/v1/rounds/{code}/check", headers=auth)
        assert bad.status_code == 200
        found = {(f["step"], f["version"], f["field"]) for f in bad.json()["findings"]}
        assert {("settled", version, "view"), ("settled", version, "signature")} <= found
        page = client.get(f"/rounds/{code}/data", headers=auth)
        assert page.status_code == 200 and page.json()["check"]["ok"] is False
        missing = client.get("/v1/rounds/RD-20000101-000000-ZZZZ/check", headers=auth)
        assert missing.status_code == 404 and missing.json()["code"] == "round-not-found"
