"""Seamless wallet mode: the operator's wallet is the ledger of record (issue 16).

A seamless session's stakes are debited at the operator's wallet before a round starts
(:mod:`ledger.seamless.gate`, at most once), its wins and the rollbacks of its voided or
unknown debits are queued as events in the same transaction as the settlement and
delivered by :mod:`ledger.seamless.outbox` (at least once). Everything is an event on the
session (intent, outcome, queued call) or on a per-transaction delivery aggregate.
"""
