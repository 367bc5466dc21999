"""A small signed client for the simulated wallet's admin calls (tests, bench, demos)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from wallet import signing
from wallet.sim.faults import FaultPlan


class SimAdmin:
    def __init__(self, base_url: str, key: bytes, http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(base_url=base_url, timeout=10)
        self._key = key

    def close(self) -> None:
        self._http.close()

    def _post(self, path: str, body: bytes) -> Any:
        reply = self._http.post(
            path, content=body, headers={signing.REQUEST_SIGNATURE: signing.sign(self._key, body)}
        )
        reply.raise_for_status()
        return reply.json()

    def set_player(self, token: str, currency: str, balance: int) -> None:
        players = [{"token": token, "currency": currency, "balance": balance}]
        self._post("/admin/players", json.dumps({"players": players}).encode())

    def balance(self, token: str) -> int | None:
        found = self._post("/admin/balances", json.dumps({"tokens": [token]}).encode())
        entry = found["balances"][token]
        return None if entry is None else int(entry["balance"])

    def set_faults(self, plan: FaultPlan) -> None:
        self._post("/admin/faults", plan.model_dump_json().encode())

    def transactions(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._post("/admin/transactions", b"{}")["transactions"]
        return rows
