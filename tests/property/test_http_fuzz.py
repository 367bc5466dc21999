"""Schema-driven fuzzing of every HTTP endpoint (schemathesis, from ``/openapi.json``).

For every operation the OpenAPI document describes, schemathesis generates requests that
fit the schema and requests that break it (wrong types, missing fields, out-of-range
numbers, odd strings). Each is sent to the real app on a SQLite store holding an
account, a funded session, finished and open rounds and a checkpoint, with the right
credential for the operation, so requests reach the handlers rather than stopping at
authentication. Path ids are mostly pointed at those real objects.

Every response must be no 5xx; it must match the documented status codes, content type
and response schema; and whenever the answer is a 4xx, the raw event rows must be
byte-for-byte what they were before the request (a refused request changes nothing).
Before each request the store is put back into a state where the operation can succeed
(the session open and funded, a round of the right game in the right phase), so fuzzing
also exercises the accepting paths; those preparations happen before the "before" digest.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app
from api.auth import Credentials
from api.catalogue import catalogue
from audit_cli.rows import read_rows
from games.blackjack import Rules, Shoe
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings
from ledger.tables import commands as tc
from ledger.tables import views as queries
from ledger.tables.runner import TableRunner
from tests.integration.table_helpers import FakeClock

OPERATOR = "fuzz-operator-token-0123456789abcdef"
AUDITOR = "fuzz-auditor-token-0123456789abcdef"
PLAYER = "ann"
EXAMPLES = 15
TABLE = "T1"
# Every round of the live table deals 9-7 against an ace up (insurance, then a step with
# hit, stand, double and cash-out): a void leaves the shoe at a multiple of 4.
FUZZ_SHOE = Shoe.of(" ".join(["9c Ad 7d 6s"] * 100))
TABLE_CONFIG = {"betting_ms": 60_000, "insurance_ms": 60_000, "step_ms": 60_000, "grace_ms": 0}


def fuzz_shoe(rules: Rules, seed: bytes) -> Shoe:
    return FUZZ_SHOE


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@dataclass
class World:
    """The store behind the app and the real objects the fuzzer's requests point at."""

    casino: Casino
    app: Any
    db: str
    clock: FakeClock
    runner: TableRunner
    sid: str = ""
    token: str = ""
    codes: list[str] = field(default_factory=list)
    requests: int = 0

    def rid(self) -> str:
        return f"fuzz-setup-{uuid.uuid4().hex}"

    def digest(self) -> str:
        h = hashlib.sha256()
        for r in read_rows(self.db):
            h.update(repr((r.notification_id, r.originator_id, r.version, r.topic)).encode())
            h.update(r.state)
        return h.hexdigest()

    def new_session(self) -> None:
        self.casino.deposit(self.rid(), PLAYER, 1_000_000)
        self.sid = self.casino.open_session(self.rid(), PLAYER, 500_000).session_id
        self.token = self.app.state.credentials.session_token(self.sid)

    def ready_for(self, path: str) -> None:
        """Put the session in a state where ``path`` can succeed."""
        session = self.casino.get_session(self.sid)
        if session.closed or session.balance < 100_000:
            self._finish_open_round()
            if not session.closed:
                self.casino.close_session(self.rid(), self.sid)
            self.new_session()
        if self.casino.account_balance(PLAYER) < 100_000:
            self.casino.deposit(self.rid(), PLAYER, 1_000_000)
        action = path.rsplit("/", 2)[-2:]
        if "table" in path:
            self._table_ready(path, action[1])
            return
        if action[0] == "red-dog" and action[1] in ("raise", "see"):
            self._open_round("red-dog", ("decide",))
        elif action[0] == "video-poker" and action[1] == "draw":
            self._open_round("video-poker", ("dealt",))
        elif action[0] == "video-poker" and action[1] in ("collect", "double", "half-double"):
            self._open_round("video-poker", ("win-pending",))
        elif action[0] == "video-poker" and action[1] == "pick":
            self._open_round("video-poker", ("double-pick",))
        elif action[1] in ("bet", "repeat", "deal"):
            self._finish_open_round()

    def _finish_open_round(self) -> None:
        code = self.casino.get_session(self.sid).open_round
        if code is not None and code.startswith("IBJ-"):
            self._void_table_round()
            return
        rnd = self.casino.open_round(self.sid)
        if rnd is not None:
            self.casino.void_round(self.rid(), rnd.code, "fuzz set-up", "FUZZ")

    # -- the live table ------------------------------------------------------------------

    def _round(self) -> Any:
        return queries.current_round(self.casino, queries.table(self.casino, TABLE))

    def _void_table_round(self) -> None:
        rnd = self._round()
        if rnd is not None and not rnd.closed:
            cmd = tc.VoidTableRound(TABLE, rnd.code, "fuzz set-up", "FUZZ")
            self.casino.command(self.rid(), cmd)

    def _table_ready(self, path: str, action: str) -> None:
        """The table unpaused, and its round where ``action`` can succeed: betting with a
        chip of the session's on it (bets, undo, 2x, all side bets, leave), the
        insurance window or step 1 with the session dealt in (insurance, decide)."""
        self.casino.command(self.rid(), tc.ResumeTable(TABLE))
        seat = path.startswith("/v1/sessions/")
        wanted = {"insurance": "insurance", "decide": "step"}.get(action, "betting")
        rnd = self._round()
        if rnd is not None and rnd.phase == wanted and (not seat or self._seated(rnd)):
            return
        self._void_table_round()
        self.runner.tick(self.clock.advance(0))  # the next round opens its window
        rnd = self._round()
        if action == "repeat" or not seat:
            return
        self._finish_open_round()  # a Red Dog or video poker round keeps the session busy
        bet = tc.PlaceBet(self.sid, TABLE, "main", 1_000)
        self.casino.command(self.rid(), bet)
        if wanted == "betting":
            return
        self.runner.tick(self.clock.advance(rnd.config["betting_ms"]))  # the deal
        if wanted == "step":
            decision = tc.TableDecide(self.sid, TABLE, 0, "no-insurance")
            self.casino.command(self.rid(), decision)
            self.runner.tick(self.clock.advance(0))  # everyone answered: step 1
        self.codes.append(self._round().code)

    def _seated(self, rnd: Any) -> bool:
        view = queries.session_view(self.casino, TABLE, self.sid)
        return bool(view["seat"] and view["seat"]["chips"] and view["seat"]["status"] == "open")

    def _open_round(self, game: str, phases: tuple[str, ...]) -> None:
        rnd = self.casino.open_round(self.sid)
        if rnd is not None and rnd.game == game and rnd.view["phase"] in phases:
            return
        self._finish_open_round()
        for _ in range(60):
            if game == "red-dog":
                r = self.casino.red_dog_bet(self.rid(), self.sid, 100)
            else:
                r = self.casino.vp_deal(self.rid(), self.sid, "jb-4line", 10, 1, 4)
                if "dealt" not in phases:
                    holds = r.view["recommended"]
                    r = self.casino.vp_act(self.rid(), self.sid, ["draw", holds])
                if r.status == "open" and "double-pick" in phases:
                    r = self.casino.vp_act(self.rid(), self.sid, ["double"])
            self.codes.append(r.code)
            if r.status == "open" and r.view["phase"] in phases:
                return
            self._finish_open_round()
        raise AssertionError(f"could not reach {game} {phases} in 60 rounds")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    data: Path = tmp_path_factory.mktemp("fuzz")
    settings_ = Settings(
        data_dir=data,
        operator_token=OPERATOR,  # type: ignore[arg-type]
        auditor_token=AUDITOR,  # type: ignore[arg-type]
        api_secret="fuzz-api-secret-0123456789abcdef0123",  # type: ignore[arg-type]
    )
    clock = FakeClock()
    casino = bootstrap(settings_, keyring=Keyring.generate(), clock=clock, shoe_maker=fuzz_shoe)
    runner = TableRunner(casino, TABLE, clock)
    w = World(casino, create_app(casino), str(data / "casino.sqlite"), clock, runner)
    casino.command(w.rid(), tc.CreateTable(TABLE, "EUR", TABLE_CONFIG))
    catalogue()  # the video poker full cycle, computed once (croupier serve warms it too)
    casino.open_account(w.rid(), PLAYER, "EUR")
    w.new_session()
    w.ready_for("red-dog/see")
    w.ready_for("video-poker/pick")
    casino.seal()
    w.ready_for("video-poker/draw")
    casino.seal()
    try:
        yield w
    finally:
        # schemathesis runs an ASGI app's lifespan (its metrics sampler) and its own event
        # loop's thread until the process exits: they end with this module instead.
        from schemathesis.python import asgi

        asgi._shutdown()
        casino.close()


def _operations() -> list[Any]:
    """Every operation of the app's OpenAPI document (built without any store)."""
    credentials = Credentials(OPERATOR, AUDITOR, b"x" * 32, "test", "test")
    doc = create_app(settings=Settings(), credentials=credentials).openapi()
    return [result.ok() for result in schemathesis.openapi.from_dict(doc).get_all_operations()]


OPERATIONS = _operations()


def credential(case: Any, w: World) -> str | None:
    security = case.operation.definition.raw.get("security") or []
    names = [name for requirement in security for name in requirement]
    if not names:
        return None
    if names[0] == "spectator":  # a token the operator issued for the live table
        return str(w.app.state.credentials.spectator_token(TABLE, 60)[0])
    return {"operator": OPERATOR, "auditor": AUDITOR, "session": w.token}[names[0]]


def point_at_real_objects(case: Any, w: World) -> None:
    """Path ids: the live session always (its token is the credential); the player and a
    round code half of the time (chosen by the generated value, so runs are repeatable)."""
    params = case.path_parameters or {}
    if "session_id" in params:
        params["session_id"] = w.sid
    if "player_id" in params and _even(params["player_id"]):
        params["player_id"] = PLAYER
    if "game_code" in params and _even(params["game_code"]) and w.codes:
        params["game_code"] = w.codes[len(str(params["game_code"])) % len(w.codes)]
    if "table" in params and _even(("table", params["table"])):
        params["table"] = TABLE
    body = case.body if isinstance(case.body, dict) else {}
    # A live table's open step is 1 and its limits start at 100: half the time, aim there.
    if type(body.get("step")) is int and _even(("step", body["step"])):
        body["step"] = 1
    if "/tables/" in case.path and type(body.get("amount")) is int and _even(body["amount"]):
        body["amount"] = 1_000


KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,200}$")


def fresh_idempotency_key(case: Any, n: int) -> None:
    """Generated keys repeat ("0", "A", ...), so most requests would only meet an
    idempotency conflict: make a well-formed key unique, except every fourth one (which
    keeps testing repeats and conflicts). A missing or malformed key stays as generated."""
    headers = case.headers or {}
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and KEY_PATTERN.match(key) and n % 4:
        headers["Idempotency-Key"] = f"{key[:180]}-{n}"


def _even(value: object) -> bool:
    return hashlib.sha256(repr(value).encode()).digest()[0] % 2 == 0


def _has_inputs(operation: Any) -> bool:
    raw = operation.definition.raw
    return bool(raw.get("parameters") or raw.get("requestBody"))


def _cases() -> list[Any]:
    """Every operation with valid input, and with invalid input where it takes any (an
    operation without parameters or body, such as GET /health, has nothing to make
    invalid)."""
    return [
        pytest.param(op, mode, id=f"{op.label}-{mode}")
        for op in OPERATIONS
        for mode in GenerationMode
        if mode is GenerationMode.POSITIVE or _has_inputs(op)
    ]


@pytest.mark.parametrize(("operation", "mode"), _cases())
def test_no_endpoint_answers_5xx_or_changes_the_log_when_it_refuses(
    operation: Any, mode: GenerationMode, world: World
) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def exchange(case: Any) -> None:
        world.ready_for(case.path)
        point_at_real_objects(case, world)
        world.requests += 1
        fresh_idempotency_key(case, world.requests)
        token = credential(case, world)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        before = world.digest()

        response = case.call(headers=headers, app=world.app)

        assert response.status_code < 500, response.text
        if 400 <= response.status_code < 500:
            assert world.digest() == before, (
                f"{case.method} {case.formatted_path} answered {response.status_code} "
                f"but changed the log: {response.text}"
            )
        case.validate_response(
            response, checks=CHECKS, headers=headers, transport_kwargs={"app": world.app}
        )

    exchange()
