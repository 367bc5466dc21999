"""Two defects an end-to-end run found at the live table, over HTTP (the real app, a fake
clock, both stores):

- A seat whose every chip was taken back before the deal (UNDO ALL, or UNDO chip by
  chip) stayed ``open`` for ever, after its round had settled. It has no bet, so it is
  not part of the round (seed 002 deals the players who bet): ``no-bet``, in the round's
  detail, the session's previous round and the auditor's raw-row view alike, and no row
  in any account history, exactly as a session that never bet.
- A closed session (within the closed-session grace, when its token still works) was
  answered ``200`` to join and leave, with a request record written, and ``nothing-to-
  undo`` to a 2x. It acts at no table: every player's command is ``session-closed``
  (409) and writes nothing (raw rows compared). An open session's 2x with no bet is
  ``nothing-to-double``, its own code.
"""

from __future__ import annotations

from typing import Any

from audit_cli.main import main as audit_cli
from audit_cli.rounds import player_history
from audit_cli.table_round import check_table_round
from ledger.tables.views import player_rounds
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.test_http_e2e import AUDITOR, OPERATOR, bearer
from tests.integration.test_http_tables import BUY_IN, Client, seat
from tests.integration.test_http_tables import client as client  # the fixture


def test_a_seat_whose_chips_were_all_taken_back_is_not_part_of_the_round(
    client: Client, store: Store
) -> None:
    c = client
    ann, ann_token = c.player("ann")  # UNDO ALL
    bea, bea_token = c.player("bea")  # UNDO, chip by chip
    bob, bob_token = c.player("bob")  # plays
    carl, carl_token = c.player("carl")  # never bets
    c.tick()
    for sid, token in ((ann, ann_token), (bea, bea_token)):
        c.post(f"{seat(sid)}/bets", token, {"bet": "main", "amount": 1_000})
        c.post(f"{seat(sid)}/bets", token, {"bet": "hot-3", "amount": 100})
    out = c.post(f"{seat(ann)}/undo-all", ann_token)
    assert (out["bets"], out["status"], out["seated"]) == ({}, "no-bet", False)
    c.post(f"{seat(bea)}/undo", bea_token)
    out = c.post(f"{seat(bea)}/undo", bea_token)
    assert (out["bets"], out["status"], out["seated"]) == ({}, "no-bet", False)
    c.post(f"{seat(bob)}/bets", bob_token, {"bet": "main", "amount": 1_000})
    code = c.get(seat(bob), bob_token)["round"]["code"]
    for _ in range(12):  # the window closes, the round plays out, the next one opens
        c.tick(10_000)
        if c.get(seat(carl), carl_token)["round"]["number"] == 2:
            break
    detail = c.get(f"/v1/table-rounds/{code}", OPERATOR)
    assert detail["status"] == "settled" and detail["seats"] == 1
    seats = {s["player_id"]: s for s in detail["seat_list"]}
    assert set(seats) == {"ann", "bea", "bob"}  # carl never had a seat
    assert seats["bob"]["status"] == "settled"
    for name in ("ann", "bea"):
        mine = seats[name]
        assert (mine["status"], mine["dealt"], mine["bets"]) == ("no-bet", False, {}), mine
        assert (mine["staked"], mine["paid"], mine["hands"]) == (0, 0, [])
    # the session's view of the round just settled: its seat had no bet
    for sid, token in ((ann, ann_token), (bea, bea_token)):
        state = c.get(seat(sid), token)
        assert state["previous"]["status"] == "no-bet" and state["balance"] == BUY_IN
        # the auditor's view from the raw rows says the same
        audit = check_table_round(store.db, code, store.keyring.public_keys, sid)
        assert audit.ok, audit.problems
        assert audit.seat is not None and audit.seat["status"] == "no-bet"
    assert c.get(seat(carl), carl_token)["previous"] is None
    # no account-history row, as for carl: the projection, the table's read, the raw log
    for name in ("ann", "bea", "carl"):
        games = c.get(f"/v1/accounts/{name}/history", OPERATOR)["games"]
        assert [g for g in games if g["code"] == code] == [], name
        assert player_rounds(c.casino, name) == [], name
        assert [r for r in player_history(store.db, name) if r["code"] == code] == [], name
    assert [g["code"] for g in c.get("/v1/accounts/bob/history", OPERATOR)["games"]] == [code]
    keys = store.data_dir / "keys.json"
    keys.write_text(c.http.get("/v1/audit/keys", headers=bearer(AUDITOR)).text)
    args = ["verify", "--db", store.db, "--keys", str(keys), "--trust-local-keyring"]
    assert audit_cli([*args, "--balances"]) == 0


ACTIONS: list[tuple[str, dict[str, Any] | None]] = [
    ("bets", {"bet": "main", "amount": 100}),
    ("bets", {"bet": "hot-3", "amount": 100}),
    ("undo", None),
    ("undo-all", None),
    ("repeat", None),
    ("double", None),
    ("all-side-bets", None),
    ("insurance", {"take": True}),
    ("decide", {"step": 1, "decision": "stand"}),
    ("join", None),
    ("leave", None),
]
"""Every player's POST at a table."""


def test_a_closed_session_acts_at_no_table_and_writes_nothing(client: Client, store: Store) -> None:
    c = client
    ann, ann_token = c.player("ann")
    bob, bob_token = c.player("bob")
    c.tick()
    c.post(f"{seat(ann)}/bets", ann_token, {"bet": "main", "amount": 1_000})
    for _ in range(12):  # ann's round settles; she may leave
        c.tick(10_000)
        if c.get(seat(bob), bob_token)["round"]["number"] == 2:
            break
    c.post(f"/v1/sessions/{ann}/close", OPERATOR)

    def refused_all(where: str) -> None:
        before = raw_rows(store)
        for action, body in ACTIONS:
            r = c.http.post(
                f"{seat(ann)}/{action}",
                json=body,
                headers={**bearer(ann_token), "Idempotency-Key": c.key()},
            )
            got = (r.status_code, r.json().get("code"))
            assert got == (409, "session-closed"), (where, action, r.text)
        assert raw_rows(store) == before, where  # not even a request record

    refused_all("betting window open")  # round 2 waits for its first bet
    c.post(f"{seat(bob)}/bets", bob_token, {"bet": "main", "amount": 1_000})
    c.tick()  # the timer starts again with bob's bet
    c.tick(10_000)  # the deal
    assert c.get(seat(bob), bob_token)["round"]["phase"] in ("insurance", "step")
    refused_all("dealt, deciding")
    # an open session is answered as before: join and leave with no seat (200)
    carl, carl_token = c.player("carl")
    assert c.post(f"{seat(carl)}/join", carl_token)["seated"] is False
    assert c.post(f"{seat(carl)}/leave", carl_token)["seated"] is False
