"""Regression tests: error codes survive ids named like them; a retried repeat
returns the original round."""

from __future__ import annotations

from pathlib import Path

from ledger.bootstrap import bootstrap
from ledger.errors import RoundNotFound
from ledger.keys import Keyring
from ledger.results import RoundPlayed
from ledger.settings import Settings


def test_an_error_about_a_round_keeps_its_error_code() -> None:
    err = RoundNotFound("no round with game code 'JB4-X'", code="JB4-X")
    assert err.to_dict()["code"] == "round-not-found"


def test_retrying_a_red_dog_repeat_after_a_later_bet_returns_the_original(tmp_path: Path) -> None:
    app = bootstrap(Settings(data_dir=tmp_path), keyring=Keyring.generate())
    try:
        app.open_account("open", "ann", "EUR")
        app.deposit("deposit", "ann", 100_000)
        sid = app.open_session("buy-in", "ann", 50_000).session_id

        def settle(r: RoundPlayed) -> RoundPlayed:
            return r if r.status != "open" else app.red_dog_see(f"see-{r.code}", sid)

        settle(app.red_dog_bet("bet-1", sid, 100))
        first = settle(app.red_dog_repeat("repeat-1", sid))
        settle(app.red_dog_bet("bet-2", sid, 200))
        again = app.red_dog_repeat("repeat-1", sid)
        assert again.code == first.code
    finally:
        app.close()
