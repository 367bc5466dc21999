"""``croupier demo``'s live table (api/table_demo.py) on a fake clock: three players play
three rounds to settlement, their sessions close, the books verify; a second run with the
same tag replays the recorded answers and plays nothing new."""

from __future__ import annotations

import json

from api import table_demo
from audit_cli.main import main as audit_cli
from ledger.bootstrap import bootstrap
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import FakeClock


def test_the_demo_seats_three_players_for_three_settled_rounds(sqlite_store: Store) -> None:
    clock = FakeClock()
    app = bootstrap(sqlite_store.settings(), sqlite_store.keyring, clock=clock)
    sqlite_store.apps.append(app)

    def sleep(seconds: float) -> None:
        clock.advance(int(seconds * 1000))

    out = table_demo.play(app, "t1", "demo", sleep=sleep, clock=clock)
    assert len(out["rounds"]) == table_demo.ROUNDS
    for rnd in out["rounds"]:
        assert set(rnd["seats"]) == set(table_demo.PLAYERS)
        assert {s["status"] for s in rnd["seats"].values()} == {"settled"}
    final = out["final_balances"]
    for name in table_demo.PLAYERS:
        staked = sum(r["seats"][name]["staked"] for r in out["rounds"])
        paid = sum(r["seats"][name]["paid"] for r in out["rounds"])
        assert final[name] == 5_000 - staked + paid
    app.seal()
    before = raw_rows(sqlite_store)
    again = table_demo.play(app, "t1", "demo", sleep=sleep, clock=clock)
    assert again["rounds"] == out["rounds"] and again["final_balances"] == final
    topics = {t for _, _, _, t, _ in raw_rows(sqlite_store)[len(before) :]}
    # the replay moved no money and seated nobody: only the runner opened its next round
    assert not any(w in t for t in topics for w in ("session", "account", "seat")), topics
    keys = sqlite_store.data_dir / "public-keys.json"
    keys.write_text(json.dumps(app.keyring.public_document()))
    args = ["verify", "--db", sqlite_store.db, "--keys", str(keys), "--trust-local-keyring"]
    assert audit_cli([*args, "--balances"]) == 0
