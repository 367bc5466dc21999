"""The cells of one deployment, opened in one process: one Casino per cell (each composed by
``ledger.bootstrap`` on its own store and keys), and the sealer that checkpoints every cell
and then signs the index of their tree heads (:mod:`cells.index`).

Each cell's own per-command checkpoint trigger is turned off here (its
``checkpoint_every`` is set out of reach): a cell's checkpoints are written by its own
sealer thread (one per cell, so a cell whose store does not answer delays no other cell's
checkpoints), and each checkpoint written is followed at once by a freshly signed index,
so the index on disk is out of date only between those two steps (or after a crash
between them, until that cell's next checkpoint). The index names each cell's newest
checkpoint as its sealer last knew it: a cell that is down keeps its last head.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from cells import index
from cells.cellmap import Cell, CellMap
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings

log = logging.getLogger("croupier.cells")
NEVER = 2**62  # a cell's checkpoint_every: only this module's sealer checkpoints a cell


def cell_settings(base: Settings, cell: Cell) -> Settings:
    """The base settings (environment) with this cell's store and keys."""
    return base.model_copy(
        update={
            "data_dir": cell.data_dir,
            "database_url": cell.database_url,
            "keys_dir": cell.keys_dir or cell.data_dir / "keys",
            "checkpoint_every": NEVER,
        }
    )


class Cells:
    """Every cell of a map, open. ``keyrings`` (tests) gives a cell its keyring instead of
    the one in its keys directory; ``bootstrap_options`` go to every cell's bootstrap."""

    def __init__(
        self,
        cellmap: CellMap,
        base: Settings | None = None,
        *,
        keyrings: Mapping[str, Keyring] | None = None,
        **bootstrap_options: Any,
    ) -> None:
        self.map = cellmap
        self.base = base or Settings()
        self.apps: dict[str, Casino] = {}
        self._lock = threading.Lock()
        self.last_index: dict[str, Any] | None = None
        self.last_error: str | None = None
        try:
            for cell in cellmap.cells:
                self.apps[cell.name] = bootstrap(
                    cell_settings(self.base, cell),
                    keyring=(keyrings or {}).get(cell.name),
                    **bootstrap_options,
                )
            self.index_key = index.load_or_create_key(cellmap.index_key)
        except BaseException:
            self.close()
            raise

    def app(self, name: str) -> Casino:
        self.map.cell(name)  # a clear error for an unknown name
        return self.apps[name]

    def app_for(self, player_id: str) -> Casino:
        """The Casino of the player's cell (the map's stable rule)."""
        return self.apps[self.map.cell_for(player_id).name]

    def heads(self) -> list[dict[str, Any]]:
        """Each cell's log and newest checkpoint, as the index names them (from each
        sealer's memory once known: a cell whose store is down keeps its last head)."""
        heads = []
        for name, app in self.apps.items():
            view = app.sealer.newest or app.sealer.refresh()
            head: dict[str, Any] = {
                "cell": name,
                "log_id": app.key_history.log_id.hex(),
                "genesis": "SHA256:" + app.key_history.genesis_fingerprint,
            }
            head.update(
                {k: v for k, v in view.items() if k in index.HEAD_FIELDS} if view else {"seq": 0}
            )
            heads.append(head)
        return heads

    def sign_index(self) -> dict[str, Any]:
        """Sign and write the index of the cells' heads as they are known now."""
        with self._lock:
            doc = index.sign(self.index_key, self.heads(), int(time.time() * 1000))
            index.write(self.map.index_path, doc)
            self.last_index = doc
            return doc

    def seal(self) -> dict[str, Any]:
        """Checkpoint every cell, then sign and write the index of their heads. A cell
        that fails does not stop the others: the index is signed with its last head,
        then the first failure is raised."""
        failed: list[BaseException] = []
        for app in self.apps.values():
            try:
                app.seal()
            except Exception as e:
                failed.append(e)
        doc = self.sign_index()
        if failed:
            raise failed[0]
        return doc

    def _signed(self, _view: dict[str, Any]) -> None:
        try:
            self.sign_index()
        except Exception as e:  # retried after the next checkpoint; logged and in /health
            message = f"{type(e).__name__}: {e}"
            if message != self.last_error:
                log.error("cells index: %s", message)
            self.last_error = message
        else:
            self.last_error = None

    def start(self, interval: float) -> None:
        """Start every cell's sealer, each in its own thread (``croupier serve --cells``);
        each checkpoint it writes is followed by a newly signed index."""
        for name, app in self.apps.items():
            app.sealer.cell = name
            app.sealer.on_sealed.append(self._signed)
            app.sealer.start(interval, name=f"croupier-sealer-{name}")

    def close(self) -> None:
        """Stop the sealers, seal every cell and write the index once more, close them."""
        for app in self.apps.values():
            app.sealer.stop()
            app.sealer.on_sealed = [f for f in app.sealer.on_sealed if f != self._signed]
        try:
            if len(self.apps) == len(self.map.cells) and hasattr(self, "index_key"):
                self.seal()
        except Exception as e:  # never checkpoint over a damaged cell; close it anyway
            log.error("cells: not sealing on close: %s", e)
        finally:
            for app in self.apps.values():
                app.close()
