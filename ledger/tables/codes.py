"""Finding a table round by its game code: one small aggregate per code.

Its id derives from the code (as a game round's id does, :func:`ledger.rounds.round_id_for`),
so a lookup by code is one read however many rounds the table has played, and the
:class:`~ledger.tables.table.Table` aggregate keeps no index that grows with every round.
The runner creates it in the transaction that opens the round; two rounds that drew the
same code collide at insert, and the open is retried with a new code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.tables.table_round import TableRound


def round_code_id_for(code: str) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-round-code:{code}")


class TableRoundCode(Aggregate):
    TOPIC = contracts.TABLE_ROUND_CODE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.TABLE_ROUND_CODE_CREATED

    @staticmethod
    def create_id(code: str) -> UUID:
        return round_code_id_for(code)

    @event("Recorded", topic=contracts.TABLE_ROUND_CODE_RECORDED)
    def __init__(self, code: str, table: str, number: int, round_id: str) -> None:
        self.code = code
        self.table = table
        self.number = number
        self.round_id = round_id


def round_by_code(find: Callable[[type[Any], UUID], Any], table: str, code: str) -> Any:
    """The :class:`TableRound` of ``table`` with game code ``code``, or None (``find`` is
    ``UnitOfWork.get`` or ``Casino.find``)."""
    if not isinstance(code, str) or not code:
        return None
    index = find(TableRoundCode, round_code_id_for(code))
    if not isinstance(index, TableRoundCode) or index.table != table:
        return None
    rnd = find(TableRound, UUID(index.round_id))
    return rnd if isinstance(rnd, TableRound) and rnd.code == code else None
