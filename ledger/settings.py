"""Configuration from the environment (prefix ``CROUPIER_``), with embedded defaults.

With nothing set, the store is a SQLite file in ``./data`` and keys are generated in
``./data/keys`` on first run. PostgreSQL is chosen by ``CROUPIER_DATABASE_URL`` or by the
eventsourcing library's own ``POSTGRES_DBNAME`` / ``POSTGRES_HOST`` / ... variables.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from ledger.keys import Keyring, KeyringError, load_private_key, load_public_keys
from ledger.seamless.config import WalletSettings

APP_NAME = "casino"
SQLITE_FILE = "casino.sqlite"
AGGREGATE_ENTRY_BYTES = 6 * 1024  # a cached round of Jacks or Better 4-line, measured
HASH_ENTRY_BYTES = 400  # one (aggregate, version) -> (digest, event hash) entry, measured


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CROUPIER_", extra="ignore")

    data_dir: Path = Path("data")
    database_url: str | None = None
    keys_dir: Path | None = None
    generate_keys: bool = True
    signing_key: SecretStr | None = None
    signing_key_file: Path | None = None
    sealing_key: SecretStr | None = None
    public_keys_file: Path | None = None
    checkpoint_every: int = 1000
    checkpoint_interval_seconds: float = 1.0
    # False when the application role does not own the schema (`croupier db init`).
    create_tables: bool = True
    # Memory the process's caches may use, in MiB: three quarters for aggregates, a quarter
    # for the hashes of events already verified, at the sizes measured per entry
    # (bench/bench_memory.py). ``aggregate_cache_size`` overrides the aggregates' share.
    cache_budget_mb: int = 64
    aggregate_cache_size: int | None = None
    # Group commit: at most this many waiting commands share one transaction.
    group_commit_max: int = 64
    # Signed snapshots (ledger.snapshots) of accounts, sessions and tables every this many
    # events; 0: none taken and none read (every load replays all the events).
    snapshot_every: int = 100
    # HTTP API (``croupier serve``). Bearer tokens of the operator's backend and of the
    # auditors; when unset, generated on first run into DATA_DIR/api-tokens.json (0600).
    operator_token: SecretStr | None = None
    auditor_token: SecretStr | None = None
    # Key of the stateless session tokens (HMAC-SHA256); when unset, 32 random bytes in
    # KEYS_DIR/api-secret.key (0600), generated on first run.
    api_secret: SecretStr | None = None
    # HTTP limits (api/limits.py): checked before a request body is read.
    session_token_ttl_seconds: int = 86_400
    closed_session_grace_seconds: int = 300
    max_body_bytes: int = 65_536
    requests_per_address_per_second: float = 1_000.0
    requests_per_credential_per_second: float = 500.0
    auth_failures_per_second: float = 2.0
    auth_failure_burst: int = 20
    # Live table streams (api/table_stream.py): seed 002's disconnection rule follows them.
    stream_grace_seconds: float = 5.0
    stream_heartbeat_seconds: float = 15.0
    stream_poll_seconds: float = 0.25
    stream_queue_messages: int = 2_000
    streams_per_session: int = 2
    max_streams: int = 5_000
    # Wallet mode per operator (issue 16), JSON: {"op": {"mode": "seamless", "base_url":
    # ..., "key": ..., "read_timeout": 5}}; an operator not listed uses transfer mode.
    wallets: dict[str, WalletSettings] = {}

    @property
    def key_directory(self) -> Path:
        return self.keys_dir or self.data_dir / "keys"

    @property
    def aggregate_cache_entries(self) -> int:
        if self.aggregate_cache_size is not None:
            return self.aggregate_cache_size
        return max(100, self.cache_budget_mb * 2**20 * 3 // 4 // AGGREGATE_ENTRY_BYTES)

    @property
    def hash_cache_entries(self) -> int:
        return max(1_000, self.cache_budget_mb * 2**20 // 4 // HASH_ENTRY_BYTES)

    @property
    def uses_postgres(self) -> bool:
        return bool(self.database_url) or bool(os.environ.get("POSTGRES_DBNAME"))

    def eventsourcing_env(self) -> dict[str, str]:
        env = {"AGGREGATE_CACHE_MAXSIZE": str(self.aggregate_cache_entries)}
        env["IS_SNAPSHOTTING_ENABLED"] = "y" if self.snapshot_every > 0 else "n"
        if not self.create_tables:
            env["CREATE_TABLE"] = "n"
        if self.database_url:
            env.update(postgres_env(self.database_url))
        elif os.environ.get("POSTGRES_DBNAME"):
            env["PERSISTENCE_MODULE"] = "eventsourcing.postgres"
        else:
            _private_files(self.data_dir, (SQLITE_FILE, "casino.lock"))
            env["PERSISTENCE_MODULE"] = "eventsourcing.sqlite"
            env["SQLITE_DBNAME"] = str(self.data_dir / SQLITE_FILE)
            env["SQLITE_LOCK_TIMEOUT"] = "30"
        if env.get("PERSISTENCE_MODULE") == "eventsourcing.postgres" or os.environ.get(
            "POSTGRES_DBNAME"
        ):
            env["APPLICATION_RECORDER_TOPIC"] = "ledger.store:AppendOnlyPostgresRecorder"
            # Never the library's DB-function insert path: in 9.5.6 it skips the table
            # lock that keeps notification ids in commit order (DESIGN §1.2).
            env["POSTGRES_ENABLE_DB_FUNCTIONS"] = "n"
        else:
            env["APPLICATION_RECORDER_TOPIC"] = "ledger.store:AppendOnlySQLiteRecorder"
        return env

    def keyring(self) -> Keyring:
        if self.signing_key or self.signing_key_file:
            return self._keyring_from_env()
        return Keyring.open_dir(self.key_directory, create=self.generate_keys)

    def _keyring_from_env(self) -> Keyring:
        if self.signing_key_file:
            sk = load_private_key(self.signing_key_file.read_bytes())
        else:
            assert self.signing_key is not None
            sk = load_private_key(self.signing_key.get_secret_value().encode())
        if not self.sealing_key:
            raise KeyringError(
                "CROUPIER_SEALING_KEY (64 hex digits) is required with a signing key"
            )
        try:
            sealing = bytes.fromhex(self.sealing_key.get_secret_value())
        except ValueError as e:
            raise KeyringError("CROUPIER_SEALING_KEY must be 64 hex digits") from e
        if len(sealing) != 32:
            raise KeyringError("CROUPIER_SEALING_KEY must be 64 hex digits (256 bits)")
        publics = {}
        if self.public_keys_file:
            publics = load_public_keys(json.loads(self.public_keys_file.read_text()))
        from ledger.keys import key_id

        # KEYS_DIR may hold the previous private key (signing-<kid>.pem): the rotation to
        # this key must be recorded in the log, signed by that one.
        return Keyring(
            key_id(sk.public_key()),
            sk,
            "seal-env",
            {"seal-env": sealing},
            publics,
            keys_dir=self.key_directory,
        )


def _private_files(data_dir: Path, names: tuple[str, ...]) -> None:
    """The data directory 0700 and the SQLite files 0600 when this creates them: they hold
    player ids, balances and request results (SQLite gives its -wal and -shm files the
    database file's mode)."""
    if not data_dir.exists():
        data_dir.mkdir(parents=True, mode=0o700)
        data_dir.chmod(0o700)  # mkdir's mode is masked by the umask
    for name in names:
        path = data_dir / name
        if not path.exists():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                pass  # another process made it first
            else:
                path.chmod(0o600)


def postgres_env(url: str) -> dict[str, str]:
    """``postgresql://user:password@host:port/dbname?schema=name`` to the library's variables."""
    u = urlparse(url)
    if u.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"database url must start with postgresql://, got {u.scheme!r}")
    env: dict[str, Any] = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": (u.path or "/").lstrip("/") or "postgres",
        "POSTGRES_HOST": u.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(u.port or 5432),
        "POSTGRES_USER": unquote(u.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(u.password or ""),
    }
    schema = parse_qs(u.query).get("schema")
    if schema:
        env["POSTGRES_SCHEMA"] = schema[0]
    return env
