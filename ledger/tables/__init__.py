"""Infinite Blackjack live tables on the ledger (DESIGN §6, issue 13).

Aggregates: :class:`~ledger.tables.table.Table` (configuration),
:class:`~ledger.tables.shoe.TableShoe` (committed, sealed, revealed seed),
:class:`~ledger.tables.table_round.TableRound` (shared state, written by the runner) and
:class:`~ledger.tables.seat.TableSeat` (one per player per round, saved with the player's
session). :mod:`ledger.tables.compose` holds every handler for
:func:`ledger.bootstrap.bootstrap`; :class:`~ledger.tables.runner.TableRunner` advances a
table. (This file imports nothing, so the package's modules can import each other's
siblings without a cycle through it.)
"""
