"""A winning seat's settlement as one session event (issue 28 item 3): the session's
``round-settled`` credits the win and closes the round, where older code wrote
``win-credited`` then ``round-closed``. The read side's views (statement lines,
balances, daily totals) are the same for the one event as for the pair; a log written
with the pair still verifies; and an insider with the signing key who forges the
combined event's credit, or takes it out, is caught by ``audit-cli verify``'s
re-execution (``tests/integration/forge.py`` re-signs and re-links the whole log)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit_cli.main import main as audit_main
from audit_cli.rows import Row, read_rows
from ledger import contracts
from ledger.accounts import GameSession
from ledger.readside.totals import daily
from ledger.statement import statements
from tests.conftest import Store, _make_store
from tests.integration.forge import KEEP, TOPIC, payload, rewrite
from tests.integration.table_helpers import Live
from tests.integration.test_reexec import SHOE_SEED, money, pin, verify
from tests.integration.test_table_shoe import ONE_DECK, POLICY, play_a_round

ROUNDS = 3


def old_pair(
    self: GameSession, game_code: str, amount: int, last_stake: dict[str, Any] | None
) -> None:
    """What the runner wrote before: the credit, then the close."""
    self.credit_win(game_code, amount)
    self.round_closed(game_code, last_stake)


def played(store: Store) -> Live:
    live = Live(store, config=ONE_DECK, seeds=(SHOE_SEED,))
    sessions = {name: live.player(name, 50_000) for name in POLICY}
    live.tick()
    for n in range(1, ROUNDS + 1):
        play_a_round(live, sessions, n)
    live.app.seal()
    return live


def topics(store: Store) -> Counter[str]:
    return Counter(r.topic for r in read_rows(store.db))


def views(live: Live) -> dict[str, Any]:
    """What the read side shows every player, without what differs between two logs of
    the same play (log positions, session ids, round codes, times)."""
    book = statements(live.app)
    out: dict[str, Any] = {}
    for name in POLICY:
        lines = [
            (
                ln.kind,
                ln.ledger,
                ln.amount,
                ln.currency,
                ln.balance,
                ln.account_balance,
                ln.session_balance,
            )
            for ln in book.lines(name)
        ]
        totals, ledgers = book.ledgers(name)
        kinds = sorted((k.split(":", 1)[0], v) for k, v in ledgers.items())
        out[name] = (lines, totals, kinds)
    days, _ = daily(live.app)
    out["days"] = [{k: v for k, v in d.items() if k != "position"} for d in days]
    return out


@pytest.fixture
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    kind = request.param
    one, two = _make_store(kind, tmp_path / "one"), _make_store(kind, tmp_path / "two")
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    yield next(one), next(two)
    for gen in (one, two):
        next(gen, None)


@pytest.mark.parametrize(
    "two_stores", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_the_views_are_the_same_for_the_one_event_as_for_the_old_pair(
    two_stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    new_store, old_store = two_stores
    new = played(new_store)
    with monkeypatch.context() as patch:
        patch.setattr(GameSession, "settle_round", old_pair)
        old = played(old_store)
    new_topics, old_topics = topics(new_store), topics(old_store)
    wins = new_topics[contracts.SESSION_ROUND_SETTLED]
    assert wins > 0 and new_topics[contracts.SESSION_WIN_CREDITED] == 0
    assert old_topics[contracts.SESSION_ROUND_SETTLED] == 0
    assert old_topics[contracts.SESSION_WIN_CREDITED] == wins  # every win, one event fewer
    assert (
        old_topics[contracts.SESSION_ROUND_CLOSED]
        == new_topics[contracts.SESSION_ROUND_CLOSED] + wins
    )
    assert views(new) == views(old)
    for live in (new, old):
        for p in live.app.readside.projections.values():
            assert p.check().differences == [], p.name
    for store in (new_store, old_store):  # the old pair still replays and verifies
        args = ["verify", "--db", store.db, "--pin", pin(store), "--balances", "--jobs", "1"]
        assert audit_main(args) == 0


def _a_combined_win(store: Store) -> tuple[str, str, int]:
    """(game code, session, credit) of a round-settled event whose round credited that
    session nothing else (no cash-out before it)."""
    rows = list(read_rows(store.db))
    other = {
        (payload(r)["game_code"], r.originator_id)
        for r in rows
        if r.topic == contracts.SESSION_WIN_CREDITED
    }
    for r in rows:
        if r.topic == contracts.SESSION_ROUND_SETTLED:
            doc = payload(r)
            if (doc["game_code"], r.originator_id) not in other:
                return str(doc["game_code"]), r.originator_id, int(doc["amount"])
    raise AssertionError("no round settled with a win")


def test_a_combined_credit_forged_with_the_key_is_caught(store: Store) -> None:
    played(store)
    code, session, _ = _a_combined_win(store)

    def more(row: Row, doc: dict[str, Any]) -> str:
        mine = row.topic == contracts.SESSION_ROUND_SETTLED and row.originator_id == session
        if mine and doc["game_code"] == code:
            doc["amount"] += 500
            doc["movement"]["amount"] += 500
        return KEEP

    rewrite(store, more)
    report = verify(store)
    assert {f.check for f in report.findings} == {"reexec-amount"}, report.findings
    (found,) = money(report)
    assert (found.game_code, found.kind, found.session_id) == (code, "win", session)
    assert found.recorded == found.expected + 500


def test_a_combined_credit_taken_out_with_the_key_is_caught(store: Store) -> None:
    """The insider turns the round's settlement into a plain close (no movement, the
    session's balances after it lowered to match): the books balance, the win is gone."""
    played(store)
    code, session, credit = _a_combined_win(store)

    def take_out(row: Row, doc: dict[str, Any]) -> str:
        mine = row.topic == contracts.SESSION_ROUND_SETTLED and row.originator_id == session
        if mine and doc["game_code"] == code:
            doc[TOPIC] = contracts.SESSION_ROUND_CLOSED
            for field in ("amount", "balance", "movement"):
                doc.pop(field)
        return KEEP

    rewrite(store, take_out)
    report = verify(store)
    found = money(report)
    assert {(f.game_code, f.kind, f.session_id) for f in found} == {(code, "win", session)}
    assert found[0].recorded == found[0].expected - credit
    assert {f.check for f in report.findings} <= {"reexec-amount", "reexec-no-movement"}
