"""``GET /health``: whether each store answers and how old its newest checkpoint is.

Answered from memory only (each sealer's last tick, :class:`ledger.checkpoints.Sealer`),
so it answers at once while a store does not: the sealer reads its store every tick, and
a tick that fails names the store's error here until one succeeds. No credential; no
secret and no player data in it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from ledger.checkpoints import Sealer


class StoreHealth(BaseModel):
    status: str
    """``ok``, or ``failing`` while the sealer's last attempt failed (the store did not
    answer, or refused a checkpoint)."""
    last_checkpoint_age_seconds: float | None = None
    """Seconds since the newest checkpoint known (None before the first)."""
    error: str | None = None
    """Why the sealer's last attempt failed (also logged), else None."""


class Health(BaseModel):
    status: str
    """``ok``, or ``degraded`` while the sealer's last attempt failed."""
    last_checkpoint_age_seconds: float | None = None
    """Seconds since the newest checkpoint was written (None before the first)."""
    sealer_error: str | None = None
    """Why the sealer's last attempt failed (also logged), else None."""


class CellsHealth(BaseModel):
    status: str
    """``ok``, or ``degraded`` when any cell is failing or the index could not be signed."""
    failing: list[str] = []
    """The cells whose store is failing, by name."""
    cells: dict[str, StoreHealth]
    index_error: str | None = None
    """Why the index of the cells' tree heads could not be signed, else None."""


def store_health(sealer: Sealer) -> StoreHealth:
    return StoreHealth(
        status="failing" if sealer.last_error else "ok",
        last_checkpoint_age_seconds=sealer.checkpoint_age(),
        error=sealer.last_error,
    )


def health(sealer: Sealer | None) -> Health:
    if sealer is None:
        return Health(status="ok")
    one = store_health(sealer)
    return Health(
        status="degraded" if one.error else "ok",
        last_checkpoint_age_seconds=one.last_checkpoint_age_seconds,
        sealer_error=one.error,
    )


def cells_health(sealers: Mapping[str, Sealer], index_error: str | None) -> CellsHealth:
    cells = {name: store_health(s) for name, s in sealers.items()}
    failing = [name for name, h in cells.items() if h.error]
    return CellsHealth(
        status="degraded" if failing or index_error else "ok",
        failing=failing,
        cells=cells,
        index_error=index_error,
    )
