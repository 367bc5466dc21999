"""A duplicate of a command (same request id, same body) that arrives while the
original is in flight is refused by the state the original created, instead of returning
the original result."""

import threading
from pathlib import Path

from ledger.bootstrap import bootstrap
from ledger.keys import Keyring
from ledger.settings import Settings


def test_concurrent_duplicates_of_a_deal_all_return_the_original_result(tmp_path: Path) -> None:
    app = bootstrap(Settings(data_dir=tmp_path), keyring=Keyring.generate())
    try:
        app.open_account("open", "ann", "EUR")
        app.deposit("deposit", "ann", 100_000)
        sid = app.open_session("buy-in", "ann", 10_000).session_id
        barrier = threading.Barrier(8)
        results, errors = [], []

        def deal() -> None:
            barrier.wait()
            try:
                results.append(app.vp_deal("deal-1", sid, "jb-4line", 10, 1, 4))
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=deal) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert app.session_balance(sid) == 10_000 - 40  # one debit: this part holds
        assert errors == []
        assert all(r == results[0] for r in results)
    finally:
        app.close()
