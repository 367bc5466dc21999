"""Seamless wallet: the protocol croupier speaks to an operator's wallet, the client that
speaks it, the delivery loop for at-least-once calls, and a reference operator wallet
(``croupier wallet-sim``) to play and test against.

Nothing here touches croupier's event log: the client reports outcomes; recording them as
events (and the outbox that feeds :func:`wallet.delivery.deliver_until_acknowledged`)
belongs to the ledger.
"""
