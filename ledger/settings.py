"""Configuration from the environment (prefix ``CROUPIER_``), with embedded defaults.

With nothing set, the store is a SQLite file in ``./data`` and keys are generated in
``./data/keys`` on first run. PostgreSQL is chosen by ``CROUPIER_DATABASE_URL`` or by the
eventsourcing library's own ``POSTGRES_DBNAME`` / ``POSTGRES_HOST`` / ... variables.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlparse

from pydantic import SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from ledger.keys import Keyring, KeyringError, load_private_key, load_public_keys
from ledger.runner_lease import Role
from ledger.seamless.config import WalletSettings
from ledger.store import MAX_WAITING

APP_NAME = "casino"
SQLITE_FILE = "casino.sqlite"
AGGREGATE_ENTRY_BYTES = 6 * 1024  # a cached round of Jacks or Better 4-line, measured
HASH_ENTRY_BYTES = 400  # one (aggregate, version) -> (digest, event hash) entry, measured


class Settings(BaseSettings):
    """Every setting, from ``CROUPIER_<NAME>`` in the environment. Each field's docstring is
    its documentation (docs/reference/configuration.md is generated from them)."""

    model_config = SettingsConfigDict(
        env_prefix="CROUPIER_", extra="ignore", use_attribute_docstrings=True
    )

    data_dir: Path = Path("data")
    """Directory of the embedded store: the SQLite file ``casino.sqlite``, ``keys/`` and
    ``api-tokens.json`` (created 0700, files 0600)."""
    database_url: str | None = None
    """``postgresql://user:pass@host:port/db?schema=name`` selects PostgreSQL (the
    eventsourcing library's own ``POSTGRES_DBNAME``, ``POSTGRES_HOST``, ... also work)."""
    keys_dir: Path | None = None
    """Keyring directory (generated on first run, files 0600); default ``DATA_DIR/keys``."""
    generate_keys: bool = True
    """Generate missing keys on first run; ``false`` in production refuses to start without
    them."""
    signing_key: SecretStr | None = None
    """Ed25519 signing key (PKCS#8 PEM or 64 hex digits) from the environment."""
    signing_key_file: Path | None = None
    """Ed25519 signing key from a file (PKCS#8 PEM or 64 hex digits)."""
    sealing_key: SecretStr | None = None
    """64 hex digits: the AES-256-GCM key that seals round and shoe seeds (required with a
    signing key from the environment)."""
    public_keys_file: Path | None = None
    """Public keys (``audit-cli keys`` format) of format 1 rows written before the log's
    genesis; every later key is in the log."""
    checkpoint_every: int = 1000
    """Commands between automatic checkpoints."""
    checkpoint_interval_seconds: float = 1.0
    """Checkpoint timer while ``croupier serve`` runs."""
    readside_poll_seconds: float = 0.1
    """How often the read side's runner looks for other workers' writes (this worker's
    own commits wake it at once); the views' lag behind the log is about this under load."""
    gc_tuned: bool = False
    """Once started, tune the garbage collector for a server (:mod:`ledger.gc_policy`:
    start-up's objects frozen, collections less often); ``croupier serve`` sets it on
    for its workers unless it is set."""
    switch_interval_ms: float = 0.0
    """Once started, the interpreter's thread switch interval in ms
    (:mod:`ledger.switch_policy`: how long a thread back from the store may wait for the
    event loop's thread to hand it the GIL); ``0`` keeps the interpreter's 5 ms, which
    answered 10,000 players' decisions fastest of the values measured."""
    role: Role = "all"
    """What this process does on a PostgreSQL log several share (:mod:`ledger.runner_lease`):
    ``all`` (the default) serves the API and may run the live tables' runners and the
    log's upkeep (the views' fold, the checkpoints' seals), one process at a time;
    ``front`` serves the API and may do the upkeep, never the tables; ``tables`` runs the
    tables' runners (its API serves too) and never the upkeep. Fronts beside one tables
    process keep a 10,000-seat deal and settlement off the interpreter of the players'
    sockets; on a 2-core machine that measured slower than ``all`` (the operator guide,
    "A front and a tables process"). ``front`` and ``tables`` need PostgreSQL."""
    create_tables: bool = True
    """``false`` when the schema was made by ``croupier db init`` (the application role owns
    nothing)."""
    cache_budget_mb: int = 64
    """Memory the caches may use, in MiB: three quarters for aggregates (6 KiB each,
    measured), a quarter for hashes of verified events (400 B each)."""
    aggregate_cache_size: int | None = None
    """Number of aggregates cached, overriding the budget's share (``0``: unbounded)."""
    store_timeout_seconds: float = 1.0
    """PostgreSQL: the longest a request waits for a connection to the store (the pool's
    timeout) before it is answered 503 ``storage-unavailable`` with ``Retry-After``."""
    startup_timeout_seconds: float = 10.0
    """PostgreSQL: the longest a starting process waits for a connection while it creates
    or reads its tables and key history (workers and the database often start together,
    and a loaded server may take seconds to accept); a request's bound applies after."""
    group_commit_max: int = 64
    """Most waiting commands that share one transaction (group commit)."""
    snapshot_every: int = 100
    """A signed snapshot of an account, session or table each time its events reach a
    multiple of this; ``0``: none taken and none read (every load replays every event)."""
    operator_token: SecretStr | None = None
    """Bearer token of the operator's backend; when unset, generated on first run into
    ``DATA_DIR/api-tokens.json`` (0600)."""
    auditor_token: SecretStr | None = None
    """Bearer token of the auditors (read-only); generated like the operator's."""
    log_format: Literal["auto", "json", "text"] = "auto"
    """Logs (``api/logs.py``): ``json`` lines, ``text``, or ``auto`` (text when stderr is a
    terminal, else JSON)."""
    metrics_token: SecretStr | None = None
    """Bearer token of the monitoring system for ``GET /metrics`` (the operator's token
    works too)."""
    api_secret: SecretStr | None = None
    """HMAC-SHA256 key of the stateless session tokens and the round viewer's signed links;
    when unset, 32 random bytes in ``KEYS_DIR/api-secret.key`` (0600). Rotating it revokes
    every token and link."""
    session_token_ttl_seconds: int = 86_400
    """A session token expires this long after its session opened."""
    closed_session_grace_seconds: int = 300
    """A closed session's token still reads its final state this long."""
    max_body_bytes: int = 65_536
    """Larger request bodies are refused with 413 before they are read."""
    requests_per_address_per_second: float = 1_000.0
    """Requests per client address (burst twice this), else 429 with ``Retry-After``."""
    requests_per_credential_per_second: float = 500.0
    """Requests per bearer credential (burst twice this), else 429."""
    auth_failures_per_second: float = 2.0
    """Failed authentications per address, else 429."""
    auth_failure_burst: int = 20
    """Burst of failed authentications allowed per address."""
    session_commands_per_second: float = 10.0
    """Commands (``POST``) per game session, with a burst of twice this, else 429
    ``too-many-commands`` with ``Retry-After``: a player clicks a few times a second, a
    script hundreds (see the limits page)."""
    chip_moves_per_round: int = 60
    """Chips a seat may place or take back in one live-table round (a REPEAT or 2x moves
    one per bet), else 429 ``chip-limit-reached`` with ``Retry-After``."""
    header_timeout_seconds: float = 10.0
    """A connection's request line and headers must all arrive within this long of its first
    byte (or of the connection, for the first request), else it is closed (408)."""
    body_timeout_seconds: float = 30.0
    """A request's body must all arrive within this long of its headers, else the connection
    is closed."""
    keep_alive_seconds: float = 5.0
    """An idle kept-alive connection is closed after this long without a new request."""
    max_connections: int = 1_000
    """Open connections per process; never more than the process's descriptor limit less
    256 (the store, the logs and the refusal slots need theirs). Beyond it a connection
    is answered 503 ``too-many-connections`` with ``Retry-After`` (``GET /health`` is
    still answered)."""
    max_connections_per_address: int = 128
    """Open connections per client address (the connection's own peer; a trusted proxy is
    exempt), then 503 as above."""
    trusted_proxies: list[str] = []
    """Addresses or networks (``10.0.0.0/8``) of the reverse proxies whose
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` name the client, as JSON:
    ``["10.0.0.5"]``. Default: none (the connection's peer is the client, whatever the
    headers say)."""
    cors_allowed_origins: list[str] = []
    """Origins (``https://games.example.com``) whose browser pages may call the API and open
    table streams, as JSON: ``["https://a.example", "https://b.example"]``. Default: none
    (browsers refuse every cross-origin call)."""
    stream_grace_seconds: float = 5.0
    """A live table stream lost this long counts as a disconnection (seed 002)."""
    stream_heartbeat_seconds: float = 15.0
    """A heartbeat after this much silence on a table stream."""
    stream_poll_seconds: float = 0.25
    """How often a table's feed reads the log for other processes' writes."""
    stream_queue_messages: int = 2_000
    """Messages held per stream client before it is dropped (it reconnects and resumes)."""
    streams_per_session: int = 2
    """Open table streams per game session, then 429 ``too-many-streams``."""
    streams_per_address: int = 50
    """Open table streams per client address (sessions and spectators together), then
    429 ``too-many-streams``."""
    max_streams: int = 5_000
    """Open table streams per process, then 503."""
    spectator_token_minutes: int = 240
    """How long a spectator token the operator issues is valid (minutes; at most 7 days)."""
    chat_max_chars: int = 200
    """The longest table chat message (characters), else 422 ``chat-message-invalid``."""
    chat_messages: int = 5
    """Chat messages a player may send to a table within ``chat_window_seconds`` (at most
    50), else 429 ``chat-rate-limited`` with ``Retry-After``."""
    chat_window_seconds: float = 10.0
    """The window of the chat's rate limit (seconds)."""
    wallets: dict[str, WalletSettings] = {}
    """Wallet mode per operator, JSON: ``{"op": {"mode": "seamless", "base_url": ...,
    "key_file": ..., "read_timeout": 5}}``; an operator not listed is ``transfer``
    (see the wallets page)."""

    @model_validator(mode="after")
    def _no_negative_number(self) -> Settings:
        """A count, a size, a rate or a duration is never negative (nor NaN): such a value
        would be read as "off" or as "always" somewhere deep inside; refuse it at start-up."""
        for name, value in self:
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if number and (math.isnan(value) or value < 0):
                raise ValueError(f"CROUPIER_{name.upper()}: must be 0 or more, got {value}")
        return self

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
    def store(self) -> str:
        """The store as ``audit-cli --db`` names it: the PostgreSQL URL, else the SQLite file."""
        return self.database_url or str(self.data_dir / SQLITE_FILE)

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
            # Bounded from the first connection on (whole seconds here; the exact
            # figure is set on the pool once it is built: ledger.store.bound_waits).
            bounds = {
                "POSTGRES_CONNECT_TIMEOUT": str(
                    math.ceil(max(self.store_timeout_seconds, self.startup_timeout_seconds))
                ),
                "POSTGRES_MAX_WAITING": str(MAX_WAITING),
            }
            env.update({k: v for k, v in bounds.items() if k not in os.environ})
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


SETTINGS_ERRORS: tuple[type[Exception], ...] = (ValidationError, SettingsError)
"""What reading the settings raises when one of them is malformed (`settings_problem`)."""


def settings_problem(e: Exception) -> str:
    """One line naming each malformed ``CROUPIER_*`` variable and what is wrong with it,
    for the commands' start-up errors (a traceback of pydantic's internals helps no one)."""
    if isinstance(e, ValidationError):
        parts = []
        for err in e.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            if not field:  # a check across settings names its variable in its message
                parts.append(err["msg"].removeprefix("Value error, "))
                continue
            secret = any(w in field for w in ("key", "token", "secret", "url"))
            shown = "" if secret else f" (got {err.get('input')!r})"  # never echo a secret
            parts.append(f"CROUPIER_{field.upper()}: {err['msg']}{shown}")
        return "bad setting " + "; ".join(parts)
    found = re.search(r'field "([a-z_]+)"', str(e))
    name = f"CROUPIER_{found.group(1).upper()}" if found else "a CROUPIER_ variable"
    cause = f": {e.__cause__}" if e.__cause__ is not None else ""
    return f"bad setting {name}: not valid JSON (lists and maps are JSON){cause}"
