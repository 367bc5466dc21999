"""Per-session limits (issue 22, item 3): one session's bet/undo loop cannot grow the log
without bound. A seat moves at most ``chip_moves_per_round`` chips a round and a session
sends at most ``session_commands_per_second`` commands; beyond either: 429 with
``Retry-After``, a typed code, and nothing written."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from ledger.bootstrap import bootstrap
from ledger.tables import views as queries
from ledger.tables.aggregates import TableSeat, chip_moves, seat_id_for
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import FakeClock
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.integration.test_http_tables import CONFIG, SHOE

CAP = 12


class Table:
    """An app with table T1 (fake clock, runner ticked by the test) and its own limits."""

    def __init__(self, store: Store, **limits: Any) -> None:
        self.clock = FakeClock()
        self.casino = bootstrap(
            store.settings(**CREDENTIALS, **limits),
            store.keyring,
            clock=self.clock,
            shoe_maker=lambda rules, seed: SHOE,
        )
        store.apps.append(self.casino)
        self.http = TestClient(create_app(self.casino))
        self.runner = TableRunner(self.casino, "T1", self.clock)
        self.n = 0

    def post(self, path: str, token: str, body: Any = None) -> Any:
        self.n += 1
        headers = {**bearer(token), "Idempotency-Key": f"k{self.n}"}
        return self.http.post(path, json=body, headers=headers)

    def player(self, name: str) -> tuple[str, str]:
        self.post("/v1/accounts", OPERATOR, {"player_id": name, "currency": "EUR"})
        self.post(f"/v1/accounts/{name}/deposits", OPERATOR, {"amount": 100_000})
        s = self.post("/v1/sessions", OPERATOR, {"player_id": name, "buy_in": 20_000}).json()
        return s["session_id"], s["token"]


@pytest.fixture
def table(store: Store, request: pytest.FixtureRequest) -> Iterator[Table]:
    t = Table(store, **getattr(request, "param", {}))
    with t.http:
        assert t.post("/v1/tables", OPERATOR, {"table": "T1", "currency": "EUR", "config": CONFIG})
        yield t


def seat(sid: str) -> str:
    return f"/v1/sessions/{sid}/tables/T1"


@pytest.mark.parametrize("table", [{"chip_moves_per_round": CAP}], indirect=True)
def test_a_bet_undo_loop_stops_at_the_chip_cap_and_writes_nothing_beyond_it(
    table: Table, store: Store
) -> None:
    ann, token = table.player("ann")
    bob, bob_token = table.player("bob")
    table.runner.tick(table.clock.now)  # the betting window opens (10 s)
    before = raw_rows(store)
    answers = []
    for i in range(200):
        path = f"{seat(ann)}/bets" if i % 2 == 0 else f"{seat(ann)}/undo"
        body = {"bet": "main", "amount": 100} if i % 2 == 0 else None
        answers.append(table.post(path, token, body))
    statuses = [r.status_code for r in answers]
    assert statuses[:CAP] == [200] * CAP
    assert set(statuses[CAP::2]) == {429}  # every later bet (an undo: nothing to undo, 409)
    refused = answers[CAP]
    assert refused.json()["code"] == "chip-limit-reached" and refused.json()["game_code"]
    assert refused.headers["retry-after"] == "10"  # the window's end (the fake clock stood)
    # The log grew by the cap's moves only: one seat row a chip (and its opening); two
    # session rows a chip (the stake or refund, and the round opened or closed: the seat
    # empties at each undo); one request record a command; none for the refused.
    written = raw_rows(store)[len(before) :]
    by_aggregate = Counter(str(UUID(row[1])) for row in written)
    rnd = queries.find_round(table.casino, answers[0].json()["code"])
    seat_id = str(seat_id_for(rnd.id, ann))
    assert by_aggregate[seat_id] == 1 + CAP
    assert by_aggregate[ann] == 2 * CAP
    assert len(written) == (1 + CAP) + 2 * CAP + CAP
    assert chip_moves(table.casino.find(TableSeat, UUID(seat_id))) == CAP
    # Another seat at the table is not affected.
    assert table.post(f"{seat(bob)}/bets", bob_token, {"bet": "main", "amount": 100}).is_success


@pytest.mark.parametrize("table", [{"chip_moves_per_round": CAP}], indirect=True)
def test_a_command_that_would_pass_the_cap_is_refused_whole(table: Table, store: Store) -> None:
    ann, token = table.player("ann")
    table.runner.tick(table.clock.now)
    for _ in range(CAP - 1):
        assert table.post(f"{seat(ann)}/bets", token, {"bet": "main", "amount": 100}).is_success
    before = raw_rows(store)
    # ALL SIDE BETS would move four chips: refused, nothing written; one more chip fits.
    r = table.post(f"{seat(ann)}/all-side-bets", token)
    assert (r.status_code, r.json()["code"]) == (429, "chip-limit-reached")
    r = table.post(f"{seat(ann)}/undo-all", token)
    assert (r.status_code, r.json()["code"]) == (429, "chip-limit-reached")
    assert raw_rows(store) == before
    assert table.post(f"{seat(ann)}/bets", token, {"bet": "main", "amount": 100}).is_success


@pytest.mark.parametrize("table", [{"session_commands_per_second": 0.05}], indirect=True)
def test_a_session_beyond_its_command_rate_gets_429_and_nothing_is_run(
    table: Table, store: Store
) -> None:
    ann, token = table.player("ann")
    bob, bob_token = table.player("bob")
    table.runner.tick(table.clock.now)
    assert table.post(f"{seat(ann)}/bets", token, {"bet": "main", "amount": 100}).is_success
    before = raw_rows(store)
    answers = [table.post(f"{seat(ann)}/bets", token, {"bet": "main", "amount": 100})]
    answers += [table.post(f"{seat(ann)}/undo", token) for _ in range(5)]
    refused = [r for r in answers if r.status_code == 429]
    # A token every 20 s; each refusal is held 1 s (api.limits.HOLD_SECONDS).
    assert len(refused) == 6, [r.status_code for r in answers]
    assert {r.json()["code"] for r in refused} == {"too-many-commands"}
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    # Reads are not commands; the other session has its own rate; the operator none.
    assert table.http.get(seat(ann), headers=bearer(token)).status_code == 200
    assert table.post(f"{seat(bob)}/bets", bob_token, {"bet": "main", "amount": 100}).is_success
    rows = raw_rows(store)
    assert len(rows) > len(before)  # bob's bet
    assert [r for r in rows[len(before) :] if str(UUID(r[1])) == ann] == []  # none of ann's


def test_a_real_server_stops_a_bet_undo_loop_at_the_cap_and_counts_its_rows(
    tmp_path: Path,
) -> None:
    # croupier serve with its default table: one session cycles bet/undo as fast as it
    # can; the seat's chips stop at the cap (429 chip-limit-reached, Retry-After) and the
    # session's rows in the log stop with them.
    import sqlite3
    import uuid

    import httpx

    from tests.integration.test_http_serve import launch

    cap = 20

    def rows_of(aggregate: str) -> int:
        db = sqlite3.connect(f"file:{tmp_path / 'casino.sqlite'}?mode=ro", uri=True)
        try:
            (n,) = db.execute(
                "SELECT count(*) FROM stored_events WHERE originator_id IN (?, ?)",
                (aggregate, uuid.UUID(aggregate).hex),
            ).fetchone()
            return int(n)
        finally:
            db.close()

    base, _, proc = launch(
        tmp_path, CROUPIER_OPERATOR_TOKEN=OPERATOR, CROUPIER_CHIP_MOVES_PER_ROUND=str(cap)
    )
    try:
        op = {"Authorization": f"Bearer {OPERATOR}"}
        with httpx.Client(base_url=base, timeout=30) as http:

            def post(path: str, token: str, body: Any = None) -> httpx.Response:
                headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}
                return http.post(path, json=body, headers=headers)

            post("/v1/accounts", OPERATOR, {"player_id": "eve", "currency": "EUR"})
            post("/v1/accounts/eve/deposits", OPERATOR, {"amount": 100_000})
            s = post("/v1/sessions", OPERATOR, {"player_id": "eve", "buy_in": 50_000}).json()
            sid, token = s["session_id"], s["token"]
            path = f"/v1/sessions/{sid}/tables/ibj-1"
            before = rows_of(sid)
            answers = []
            for i in range(3 * cap):
                body = {"bet": "main", "amount": 100} if i % 2 == 0 else None
                answers.append(post(f"{path}/{'bets' if i % 2 == 0 else 'undo'}", token, body))
            assert http.get("/health").status_code == 200
            assert http.get(f"/v1/sessions/{sid}", headers=op).status_code == 200
        capped = [r for r in answers if r.status_code == 429]
        assert capped, [r.status_code for r in answers]
        assert {r.json()["code"] for r in capped} == {"chip-limit-reached"}
        assert all(int(r.headers["retry-after"]) >= 1 for r in capped)
        rounds = {r.json()["code"] for r in answers if r.status_code == 200}
        # The session's rows: two a chip at most (the movement; the round opened or
        # closed), the cap's chips for each round the loop touched.
        written = rows_of(sid) - before
        assert 0 < written <= 2 * cap * len(rounds), (written, rounds)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
