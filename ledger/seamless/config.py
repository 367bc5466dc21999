"""Per-operator wallet configuration (``CROUPIER_WALLETS``, JSON): the mode, and for a
seamless wallet its base URL, shared key and timeouts."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from wallet.client import Timeouts, WalletClient
from wallet.delivery import RetryPolicy


class WalletSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["transfer", "seamless"] = "transfer"
    base_url: str | None = None
    key: SecretStr | None = None
    key_file: Path | None = None
    connect_timeout: float = Field(default=2.0, gt=0)
    read_timeout: float = Field(default=5.0, gt=0)
    max_connections: int = Field(default=50, ge=1)
    # "stdlib": wallet.http.PooledHttp (measured a quarter of httpx's CPU per call); "httpx"
    http_client: Literal["stdlib", "httpx"] = "stdlib"
    retry_first_delay: float = Field(default=0.2, ge=0)
    retry_max_delay: float = Field(default=30.0, gt=0)

    def shared_key(self) -> bytes:
        if self.key is not None:
            return self.key.get_secret_value().encode()
        if self.key_file is not None:
            return self.key_file.read_text().strip().encode()
        raise ValueError("a seamless wallet needs key or key_file")

    def retry(self) -> RetryPolicy:
        return RetryPolicy(first_delay=self.retry_first_delay, max_delay=self.retry_max_delay)

    def client(self) -> WalletClient:
        if self.base_url is None:
            raise ValueError("a seamless wallet needs base_url")
        return WalletClient(
            self.base_url,
            self.shared_key(),
            timeouts=Timeouts(
                connect=self.connect_timeout,
                read=self.read_timeout,
                write=self.read_timeout,
                pool=self.connect_timeout,
            ),
            max_connections=self.max_connections,
            retry=self.retry(),
            pooled=self.http_client == "stdlib",
        )


def seamless_clients(wallets: dict[str, WalletSettings]) -> dict[str, WalletClient]:
    return {op: w.client() for op, w in wallets.items() if w.mode == "seamless"}
