"""Composes seamless mode onto a Casino (called by :func:`ledger.bootstrap.bootstrap`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ledger.casino import Casino
from ledger.seamless.book import OpenItems
from ledger.seamless.commands import FinishStake, IntendStake, OpenSeamlessSession, RecordDeliveries
from ledger.seamless.gate import StakeGate
from ledger.seamless.handlers import SeamlessHandlers
from ledger.seamless.outbox import Outbox
from ledger.significant import WalletWatch
from wallet.client import WalletClient
from wallet.delivery import RetryPolicy

STALE_AFTER_SECONDS = 60.0
"""A debit intent without an outcome that no request of this process is handling is
rolled back after this long (its request failed between the debit and the outcome)."""


@dataclass
class Seamless:
    gate: StakeGate
    outbox: Outbox
    wallets: Mapping[str, WalletClient]
    open_items: OpenItems
    """The open wallet transactions, followed from the log (the gate's and the outbox's)."""

    def start(self) -> None:
        """Before serving: roll back debits left without an outcome, rebuild the outbox
        from the log and start delivering it in the background."""
        self.gate.recover()
        self.outbox.catch_up()
        self.outbox.start()

    def stop(self) -> None:
        self.outbox.stop()


def compose(
    app: Casino, wallets: Mapping[str, WalletClient], policy: RetryPolicy | None = None
) -> Seamless:
    handlers = SeamlessHandlers(set(wallets), app.handlers)
    app.handlers.add(
        OpenSeamlessSession.handled_by(handlers.open_session),
        IntendStake.handled_by(handlers.intend_stake),
        FinishStake.handled_by(handlers.finish_stake),
        RecordDeliveries.handled_by(handlers.record_deliveries),
    )
    for operator, client in wallets.items():  # its outages and recoveries, in the log
        observers = getattr(client, "observers", None)  # a test's stand-in may have none
        if observers is not None:
            observers.append(WalletWatch(app, operator).saw)
    items = OpenItems(app)
    gate = StakeGate(app, wallets, items)
    app.stake_gate = gate
    outbox = Outbox(app, wallets, items, policy=policy)
    outbox.every_poll.append(lambda: gate.resolve_stale(STALE_AFTER_SECONDS))
    app.on_close.append(outbox.stop)
    return Seamless(gate, outbox, wallets, items)
