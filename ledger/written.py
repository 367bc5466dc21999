"""The rows this process wrote, by notification id, until a checkpoint covers them.

The sealer's checkpoint is a Merkle tree over every row's event hash in log order. Before,
it read every row since the last checkpoint back from the store and opened it: at Red
Dog's rate that was 7 to 9 % of the server's samples, reading rows this process had
itself just sealed (docs/performance/request-path.md). The event store now notes each row
it inserts (after its transaction committed) with the hash it sealed it under, and the
sealer takes that hash for those rows: it reads only the ids after its last checkpoint,
and reads and opens in full only the rows it was not handed (another process's, or any
row an insider added).

What a checkpoint covers stays the log's rows, in order, each by its event hash. For a
row this process wrote, that hash is the one it signed, not one re-read: a row changed in
the store before the seal no longer matches the checkpoint, and ``audit-cli verify``
reports it; a row deleted before the seal is missing from the ids and is not covered,
as before.

At most :attr:`Written.most` rows are held: past that the oldest are dropped, and the
sealer reads those from the store, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import islice
from typing import NamedTuple


class Row(NamedTuple):
    """What the sealer needs of a row this process wrote."""

    event_hash: bytes
    kid: str  # the key that signed it (the sealer checks it was valid at its position)
    topic: str


class Written:
    def __init__(self, most: int = 100_000) -> None:
        self.most = most
        self._rows: dict[int, Row] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def add(
        self, ids: Sequence[int], hashes: Sequence[bytes], kid: str, topics: Sequence[str]
    ) -> None:
        """Note committed rows: their notification ids, event hashes and topics."""
        with self._lock:
            rows = self._rows
            for n, h, topic in zip(ids, hashes, topics, strict=True):
                rows[n] = Row(h, kid, topic)
            over = len(rows) - self.most
            if over > 0:  # the first noted are the oldest (ids grow as rows are committed)
                for n in list(islice(rows, over)):
                    del rows[n]

    def take(self, ids: Sequence[int]) -> list[Row | None]:
        """The noted row of each id (None: not written here, or dropped), forgotten."""
        with self._lock:
            pop = self._rows.pop
            return [pop(n, None) for n in ids]

    def forget_through(self, last_id: int) -> None:
        """Forget every row at or before ``last_id`` (a checkpoint covers them)."""
        with self._lock:
            rows = self._rows
            if rows and min(rows) <= last_id:
                self._rows = {n: row for n, row in rows.items() if n > last_id}
