"""Infinite Blackjack live tables on the ledger (DESIGN §6, issue 13).

- :mod:`~ledger.tables.aggregates`: the table, its shoes, its rounds (shared state,
  written by the runner) and their seats (one per player per round, saved with the
  player's session);
- :mod:`~ledger.tables.config`: a table's configuration, :class:`TableConfig`;
- :mod:`~ledger.tables.commands`: every command and the frozen result it answers;
- :mod:`~ledger.tables.errors`: their typed errors;
- :mod:`~ledger.tables.context`: what the handlers share (loading, the shoe and round
  caches, a seat's replay through the engine);
- :mod:`~ledger.tables.players`, :mod:`~ledger.tables.runner`,
  :mod:`~ledger.tables.operator`: the handlers (``routes()`` each, composed by
  :func:`ledger.bootstrap.bootstrap`), and the runner's loop;
- :mod:`~ledger.tables.intake`: the players' commands applied in bulk, and
  :mod:`~ledger.tables.arrivals`: each judged by when it arrived;
- :mod:`~ledger.tables.views`: the read views (the session's table, a round, histories,
  decision statistics); :mod:`~ledger.tables.account_rows`: the account-history fold
  shared with the auditor.

(This file imports nothing, so the package's modules import each other without a cycle
through it.)
"""
