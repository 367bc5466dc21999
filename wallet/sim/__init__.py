"""The reference operator wallet (``croupier wallet-sim``): the seamless-wallet protocol
served by FastAPI over its own SQLite balances, with fault injection for tests and demos.

This is the *operator's* system, not croupier's log: a plain table of balances and one of
transactions (keyed by transaction id, so every call is idempotent by id) is what an
operator's wallet is, so no event sourcing, signatures or chains here.
"""
