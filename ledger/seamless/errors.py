"""Typed errors of seamless mode (their HTTP statuses are chosen in ``api/errors.py``)."""

from __future__ import annotations

from ledger.errors import LedgerError


class WalletUnavailable(LedgerError):
    """The operator's wallet gave no trustworthy answer (unreachable, timeout, 5xx, a
    malformed, unsigned or mis-signed answer): no round started; any debit sent is being
    rolled back. Retrying with the same key gives the same answer; a new key may succeed."""

    code = "wallet-unavailable"


class WalletRefused(LedgerError):
    """The operator's wallet refused the stake (signed): nothing was taken."""

    code = "wallet-refused"


class StakeRolledBack(LedgerError):
    """The wallet accepted the stake but the round could not start (the session changed
    meanwhile): the stake is being rolled back."""

    code = "stake-rolled-back"


class NoSeamlessWallet(LedgerError):
    """The operator named has no seamless wallet configured."""

    code = "no-seamless-wallet"
