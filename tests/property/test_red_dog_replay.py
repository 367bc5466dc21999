"""Red Dog replay is exact (DESIGN §1.4, §2.5): every round played through the real Casino
re-derives, card for card and payout for payout, from its revealed seed.

Hypothesis chooses the bets, the player's decisions (see, raise by any legal amount, void
mid-round or after settlement) and each round's seed, which a fake seed source hands to
the Casino in place of the OS CSPRNG so that every example replays the same way. The
tamper case shows that a payout rewritten and re-signed with the real key passes the
signature and chain checks but not the replay.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit_cli.rounds import check_round
from audit_cli.rows import read_rows
from audit_cli.verify import trust_candidates, verify
from games.red_dog import engine as rd
from ledger import envelope
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.results import RoundPlayed
from ledger.rounds import commitment, round_id_for
from ledger.settings import Settings
from tests.conftest import Store
from tests.helpers import ChosenSeeds

BUY_IN = 50_000
RULES = rd.DEFAULT_RULES
SETTLED = "croupier/round/settled@1"

bets = st.one_of(
    st.sampled_from([RULES.min_bet, 150, 500, 1_000]),
    st.integers(RULES.min_bet, 2_000),
)
choices = st.sampled_from(["see", "raise", "raise-max", "void-open", "void-settled"])
seeds = st.binary(min_size=32, max_size=32)
Plan = tuple[int, str, int, bytes]  # bet, choice, raise as a percentage of the most, seed


def play_round(
    app: Casino, sid: str, i: int, bet: int, choice: str, percent: int
) -> tuple[RoundPlayed, list[list[Any]]]:
    """One round as a player (and, for voids, the operator) might play it: the final
    result and the decisions taken."""
    result = app.red_dog_bet(f"bet-{i}", sid, bet)
    decisions: list[list[Any]] = []
    if result.status == "open":
        if choice == "void-open":
            return app.void_round(f"void-{i}", result.code, "malfunction", f"INC-{i}"), []
        most = result.view["max_raise"]
        if choice == "raise" and most:
            amount = max(1, most * percent // 100)
            result = app.red_dog_raise(f"raise-{i}", sid, amount)
            decisions.append(["raise", amount])
        elif choice == "raise-max" and most:
            result = app.red_dog_raise(f"raise-{i}", sid, most)
            decisions.append(["raise", most])
        else:
            result = app.red_dog_see(f"see-{i}", sid)
            decisions.append(["see"])
    assert result.status == "settled"
    if choice == "void-settled":
        return app.void_round(f"void-{i}", result.code, "malfunction", f"INC-{i}"), decisions
    return result, decisions


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rounds=st.lists(st.tuples(bets, choices, st.integers(1, 100), seeds), min_size=1, max_size=6)
)
def test_every_round_re_derives_from_its_revealed_seed(rounds: list[Plan]) -> None:
    keyring = Keyring.generate()
    with tempfile.TemporaryDirectory() as tmp:
        app = bootstrap(
            Settings(data_dir=Path(tmp)),
            keyring=keyring,
            seed_source=ChosenSeeds(*[seed for *_, seed in rounds]),
        )
        try:
            app.open_account("open", "ann", "EUR")
            app.deposit("deposit", "ann", BUY_IN)
            sid = str(app.open_session("buy-in", "ann", BUY_IN).session_id)
            played = [play_round(app, sid, i, *plan[:3]) for i, plan in enumerate(rounds)]
            balance = app.session_balance(sid)
        finally:
            app.close()
        db = str(Path(tmp) / "casino.sqlite")

        net = 0
        for (bet, *_, dealt), (result, decisions) in zip(rounds, played, strict=True):
            report = check_round(db, result.code)
            assert report.ok, (result.code, report.problems)
            assert report.status == result.status in ("settled", "voided")
            seed = bytes.fromhex(result.seed)
            assert seed == dealt and commitment(seed) == result.commitment
            replayed = rd.replay(RULES, bet, decisions, seed)
            cards = [str(c) for c in replayed.cards]
            assert cards == [str(c) for c in rd.shuffled_deck(seed)[: len(cards)]]
            assert cards == result.view["cards"]
            if result.status == "settled":
                assert (replayed.payout, replayed.staked) == (result.payout, result.staked)
                assert replayed.outcome is not None and replayed.outcome.value == result.outcome
                net += replayed.payout - replayed.staked  # a void nets zero: full refund
        assert balance == BUY_IN + net
        books = verify(read_rows(db), keyring.public_keys, jobs=1)
        assert books.ok, books.findings


def test_a_payout_re_signed_with_the_real_key_passes_the_signatures_but_not_the_replay(
    sqlite_store: Store,
) -> None:
    store = sqlite_store
    app = store.open()
    app.open_account("open", "ann", "EUR")
    app.deposit("deposit", "ann", BUY_IN)
    sid = str(app.open_session("buy-in", "ann", BUY_IN).session_id)
    for i in range(100):  # until the two cards show a spread: a round won or lost on the third
        result = app.red_dog_bet(f"bet-{i}", sid, 500)
        if result.status == "open":
            result = app.red_dog_see(f"see-{i}", sid)
            break
    assert result.outcome in ("win", "lose")
    assert check_round(store.db, result.code).ok

    rid = str(round_id_for(result.code))
    row = next(r for r in read_rows(store.db) if r.originator_id == rid and r.topic == SETTLED)
    env = envelope.decode(row.state)
    doc = json.loads(env.payload)
    doc["payout"] = result.payout + 5_000
    state, _ = envelope.seal(
        store.keyring.signing_key,
        store.keyring.signing_kid,
        rid,
        row.version,
        row.topic,
        json.dumps(doc, separators=(",", ":")).encode(),
        env.prev_hash,  # the newest event of the round: its link to v-1 is unchanged
        trust_candidates(read_rows(store.db))[0],  # the log id (public, in the genesis)
    )
    conn = store.connect()
    try:
        conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
        conn.execute("DROP TRIGGER IF EXISTS stored_events_no_delete")
        conn.execute(
            f"UPDATE {store.table} SET state = ? WHERE rowid = ?", (state, row.notification_id)
        )
    finally:
        conn.close()

    signed = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert signed.checkpoints == 0  # nothing sealed yet, so only signatures and chains apply
    assert signed.ok, signed.findings
    report = check_round(store.db, result.code)
    assert not report.ok
    assert any("payout" in p for p in report.problems), report.problems
