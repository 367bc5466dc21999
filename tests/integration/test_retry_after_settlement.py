"""Every mutating command, retried after its round settled and after a restart, answers as
the first time and moves nothing.

A session plays every command there is (accounts, sessions, voids, every Red Dog and Jacks
or Better action including a draw sent without holds, the player's settings, every live
blackjack table command but the runner's own), to the end of each round. Then
every request is sent again with its request id: in process (``Casino.command``) and over
HTTP (the same path, body and ``Idempotency-Key``), before and after the application is
closed and reopened. Each answer must equal the first, and the raw stored rows must not
change. The idempotency record covers the command as it arrived: a bare ``draw`` whose
holds were filled in from the round must still be recognised once the round has moved on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from games import registry
from games.blackjack import Rules, Shoe
from ledger import commands as c
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.chat import BanChat, HideChat, MuteChat, PostChat
from ledger.player_settings import ChangeSettings
from ledger.presence import HoldTable, ReleaseTable, WorkerBeat
from ledger.results import wire_of
from ledger.tables import commands as tc
from ledger.tables.runner import TableRunner
from tests.conftest import Store
from tests.helpers import ChosenSeeds, raw_rows
from tests.integration.table_helpers import FakeClock
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.toy_high_card import ENTRY, GAME

SEEDS = [hashlib.sha256(f"retry-after-settlement/{i}".encode()).digest() for i in range(400)]
DOUBLE_UP = (c.VideoPokerDouble, c.VideoPokerHalfDouble, c.VideoPokerCollect)
Sent = tuple[str, c.Command, dict[str, Any]]
RUNNER_ONLY = {
    tc.OpenRound,
    tc.StartBetting,
    tc.DealRound,
    tc.CloseInsurance,
    tc.CloseStep,
    tc.PlayDealer,
    tc.SettleBatch,
    tc.FinishRound,
    HoldTable,
    ReleaseTable,
    WorkerBeat,
}
"""Sent by the table runner, or by the server's table streams and sockets (a seat's
presence, ledger/presence.py), inside ``croupier serve``, never by a client: no route."""
# Player 9-7, dealer ace up (insurance window), hole 6; step cards 2, 5, 3, ...
TABLE_SHOE = Shoe.of("9c Ad 7d 6s 2h 5c 3d 4s 8h Tc Qd Kh 2c 3h 4d 5s 6h 7c 8d 9s")
TABLE_CONFIG = {
    "betting_ms": 10_000,
    "insurance_ms": 5_000,
    "step_ms": 5_000,
    "grace_ms": 0,
    "settle_batch": 3,
}


def one_shoe(rules: Rules, seed: bytes) -> Shoe:
    return TABLE_SHOE


def play_everything(
    send: Callable[[str, c.Command], dict[str, Any]], tick: Callable[[int], object]
) -> list[Sent]:
    """Play every mutating command at least once; each round runs to its end. ``tick``
    moves the fake clock on by some milliseconds and runs the table's runner."""
    sent: list[Sent] = []
    n = 0

    def do(cmd: c.Command) -> dict[str, Any]:
        nonlocal n
        n += 1
        rid = f"req-{n}"
        result = send(rid, cmd)
        sent.append((rid, cmd, result))
        return result

    do(c.OpenAccount("ann", "EUR"))
    do(c.Deposit("ann", 1_000_000))
    do(c.Withdraw("ann", 1_000))
    sid = do(c.OpenSession("ann", 200_000, "EUR"))["session_id"]

    # Red Dog: a bet that waits, raised; a repeat that waits, seen.
    r = do(c.RedDogBet(sid, 200))
    while r["status"] != "open":
        r = do(c.RedDogBet(sid, 200))
    r = do(c.RedDogRaise(sid, 100))
    assert r["status"] == "settled"
    r = do(c.RedDogRepeat(sid))
    while r["status"] != "open":
        r = do(c.RedDogRepeat(sid))
    assert do(c.RedDogSee(sid))["status"] == "settled"

    # Jacks or Better: hold, a draw without holds, and every double-up step, until all ran.
    wanted = {c.VideoPokerDraw, *DOUBLE_UP, c.VideoPokerPick}
    used: set[type[c.Command]] = set()
    rounds = 0
    while not wanted <= used:
        rounds += 1
        assert rounds < 200, f"never played {wanted - used}"
        r = do(c.VideoPokerDeal(sid, "jb-4line", 10, 1, 4))
        if rounds % 2:
            do(c.VideoPokerHold(sid, tuple(r["view"]["recommended"])))
            r = do(c.VideoPokerDraw(sid))  # the holds come from the hold step
        else:
            r = do(c.VideoPokerDraw(sid, tuple(r["view"]["recommended"])))
        used.add(c.VideoPokerDraw)
        while r["status"] == "open":
            if r["view"]["phase"] == "double-pick":
                r = do(c.VideoPokerPick(sid, rounds % 4))
                used.add(c.VideoPokerPick)
                continue
            step = next(
                (
                    s
                    for s in DOUBLE_UP
                    if s not in used and (s is not c.VideoPokerHalfDouble or r["view"]["win"] >= 2)
                ),
                c.VideoPokerCollect,
            )
            r = do(step(sid))
            used.add(step)
    r = do(c.VideoPokerDeal(sid, "jb-multi", 10, 1, 3))
    r = do(c.VideoPokerDraw(sid))  # no hold step: the proposal
    if r["status"] == "open":
        r = do(c.VideoPokerCollect(sid))
    do(c.VoidRound(r["code"], "display fault", "INC-9"))

    # A game added through the registry, played with the game-neutral commands.
    r = do(c.StartRound(sid, GAME, {"bet": 100}))
    assert do(c.Decide(sid, GAME, ("reveal",)))["status"] == "settled"

    # A live blackjack table: every player and operator command (the runner's own
    # commands are sent by ``tick``).
    do(ChangeSettings(sid, {"show_cash_out": False}))
    do(tc.CreateTable("T1", "EUR", dict(TABLE_CONFIG)))
    do(tc.ConfigureTable("T1", {**TABLE_CONFIG, "chip": 200}))
    tick(0)  # round 1 opens
    do(tc.Connect(sid, "T1"))
    placed = do(tc.PlaceBet(sid, "T1", "main", 200))  # a typed result, or the HTTP answer
    code = placed.code if isinstance(placed, tc.SeatChanged) else placed["code"]
    do(tc.AllSideBets(sid, "T1"))
    do(tc.DoubleBets(sid, "T1"))
    do(tc.UndoBet(sid, "T1"))
    do(tc.UndoBet(sid, "T1", everything=True))
    do(tc.PlaceBet(sid, "T1", "main", 200))
    do(tc.PauseTable("T1", "card reader check"))
    do(tc.ResumeTable("T1"))
    tick(10_000)  # the deal: ace up, the insurance window
    do(tc.TableDecide(sid, "T1", 0, "no-insurance"))
    tick(0)  # every seat decided: the window closes early, step 1 opens
    do(tc.TableDecide(sid, "T1", 1, "hit"))  # 16 + 2 = 18
    tick(0)
    do(tc.TableDecide(sid, "T1", 2, "stand"))
    tick(0)  # the dealer stands on soft 17; the seat settles; round 2 opens
    do(tc.RepeatBets(sid, "T1"))
    do(tc.Disconnect(sid, "T1"))  # before the deadline: the bets come back
    # the table chat and its moderation (issue 24)
    do(PostChat(sid, "T1", "good luck"))
    do(HideChat("T1", "ann", 1, "off topic"))
    do(MuteChat("T1", "ann", 5, "flooding"))
    do(BanChat("T1", "ann", "again"))
    do(tc.VoidTableRound("T1", code, "dealer misdeal", "INC-10"))
    do(c.CloseSession(sid))
    return sent


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    with registry.registered(ENTRY):
        yield


def open_app(store: Store, clock: FakeClock | None = None) -> Casino:
    app = bootstrap(
        store.settings(**CREDENTIALS),
        store.keyring,
        seed_source=ChosenSeeds(*SEEDS),
        clock=clock or FakeClock(),
        shoe_maker=one_shoe,
    )
    store.apps.append(app)
    return app


def wired(app: Casino) -> Callable[[str, c.Command[Any]], dict[str, Any]]:
    """The in-process answer in its wire form, as the HTTP routes send it (every field)."""
    return lambda rid, cmd: wire_of(app.command(rid, cmd))


def ticker(app: Casino, clock: FakeClock) -> Callable[[int], object]:
    runner = TableRunner(app, "T1", clock)
    return lambda ms: runner.tick(clock.advance(ms))


def test_every_command_retried_after_settlement_and_a_restart_answers_the_same_and_moves_nothing(
    store: Store,
) -> None:
    clock = FakeClock()
    app = open_app(store, clock)
    sent = play_everything(wired(app), ticker(app, clock))
    played = {type(cmd) for _, cmd, _ in sent}
    assert played == set(app.handlers) - RUNNER_ONLY, "a command is not retried"
    before = raw_rows(store)

    for rid, cmd, result in sent:
        assert wired(app)(rid, cmd) == result, cmd
    assert raw_rows(store) == before

    app.close()
    again = open_app(store)
    after_restart = raw_rows(store)  # closing wrote a checkpoint; nothing else
    assert after_restart[: len(before)] == before
    for rid, cmd, result in sent:
        assert wired(again)(rid, cmd) == result, cmd
    assert raw_rows(store) == after_restart


# -- over HTTP --------------------------------------------------------------------------------


def route(cmd: c.Command) -> tuple[str, dict[str, Any] | None, str]:
    """The path, JSON body and credential of the endpoint that sends ``cmd``."""
    session = f"/v1/sessions/{getattr(cmd, 'session_id', '')}"
    match cmd:
        case c.OpenAccount():
            return "/v1/accounts", {"player_id": cmd.player_id, "currency": cmd.currency}, "op"
        case c.Deposit():
            return f"/v1/accounts/{cmd.player_id}/deposits", {"amount": cmd.amount}, "op"
        case c.Withdraw():
            return f"/v1/accounts/{cmd.player_id}/withdrawals", {"amount": cmd.amount}, "op"
        case c.OpenSession():
            body = {"player_id": cmd.player_id, "buy_in": cmd.buy_in, "currency": cmd.currency}
            return "/v1/sessions", body, "op"
        case c.CloseSession():
            return f"{session}/close", None, "op"
        case c.VoidRound():
            body = {"reason": cmd.reason, "incident_id": cmd.incident_id}
            return f"/v1/rounds/{cmd.code}/void", body, "op"
        case c.RedDogBet():
            return f"{session}/red-dog/bet", {"bet": cmd.bet}, "player"
        case c.RedDogRaise():
            return f"{session}/red-dog/raise", {"amount": cmd.amount}, "player"
        case c.RedDogSee():
            return f"{session}/red-dog/see", None, "player"
        case c.RedDogRepeat():
            return f"{session}/red-dog/repeat", None, "player"
        case c.VideoPokerDeal():
            body = {
                "variant": cmd.variant,
                "coin_value": cmd.coin_value,
                "coins": cmd.coins,
                "lines": cmd.lines,
            }
            return f"{session}/video-poker/deal", body, "player"
        case c.VideoPokerHold():
            return f"{session}/video-poker/hold", {"holds": list(cmd.holds)}, "player"
        case c.VideoPokerDraw():
            body = {} if cmd.holds is None else {"holds": list(cmd.holds)}
            return f"{session}/video-poker/draw", body, "player"
        case c.VideoPokerPick():
            return f"{session}/video-poker/pick", {"index": cmd.index}, "player"
        case c.StartRound():
            return f"{session}/games/{cmd.game}/start", dict(cmd.params), "player"
        case c.Decide():
            return f"{session}/games/{cmd.game}/decide", {"decision": cmd.decision()}, "player"
        case c.VideoPokerCollect() | c.VideoPokerDouble() | c.VideoPokerHalfDouble():
            action = {"vp_collect": "collect", "vp_double": "double"}.get(cmd.name, "half-double")
            return f"{session}/video-poker/{action}", None, "player"
        case ChangeSettings():
            return f"{session}/settings", dict(cmd.settings), "player"
        case PostChat():
            return f"{session}/tables/{cmd.table}/chat", {"text": cmd.text}, "player"
        case MuteChat():
            body = {"minutes": cmd.minutes, "reason": cmd.reason}
            return f"/v1/tables/{cmd.table}/chat/players/{cmd.player_id}/mute", body, "op"
        case BanChat():
            body = {"reason": cmd.reason, "banned": cmd.banned}
            return f"/v1/tables/{cmd.table}/chat/players/{cmd.player_id}/ban", body, "op"
        case HideChat():
            path = f"/v1/tables/{cmd.table}/chat/players/{cmd.player_id}/messages/{cmd.number}"
            return f"{path}/hide", {"reason": cmd.reason}, "op"
    return table_route(cmd, session)


def table_route(cmd: c.Command, session: str) -> tuple[str, dict[str, Any] | None, str]:
    """The live tables' routes (api/tables.py, api/table_operator.py)."""
    seat = f"{session}/tables/{getattr(cmd, 'table', '')}"
    match cmd:
        case tc.CreateTable():
            return (
                "/v1/tables",
                {"table": cmd.table, "currency": cmd.currency, "config": cmd.config},
                "op",
            )
        case tc.ConfigureTable():
            return f"/v1/tables/{cmd.table}/config", {"config": cmd.config}, "op"
        case tc.PauseTable():
            return f"/v1/tables/{cmd.table}/pause", {"reason": cmd.reason}, "op"
        case tc.ResumeTable():
            return f"/v1/tables/{cmd.table}/resume", None, "op"
        case tc.VoidTableRound():
            body = {"reason": cmd.reason, "incident_id": cmd.incident_id}
            return f"/v1/table-rounds/{cmd.code}/void", body, "op"
        case tc.PlaceBet():
            return f"{seat}/bets", {"bet": cmd.bet, "amount": cmd.amount}, "player"
        case tc.UndoBet():
            return f"{seat}/{'undo-all' if cmd.everything else 'undo'}", None, "player"
        case tc.TableDecide() if cmd.step == 0:
            return f"{seat}/insurance", {"take": cmd.decision == "insure"}, "player"
        case tc.TableDecide():
            return f"{seat}/decide", {"step": cmd.step, "decision": cmd.decision}, "player"
    simple = {
        tc.Connect: "join",
        tc.Disconnect: "leave",
        tc.RepeatBets: "repeat",
        tc.DoubleBets: "double",
        tc.AllSideBets: "all-side-bets",
    }
    if type(cmd) in simple:
        return f"{seat}/{simple[type(cmd)]}", None, "player"
    raise AssertionError(f"no route for {cmd!r}")


class Http:
    """Sends commands through their routes; remembers each request to send it again."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.tokens: dict[str, str] = {}
        self.requests: list[tuple[str, dict[str, Any] | None, str, str]] = []

    def post(self, path: str, body: dict[str, Any] | None, token: str, key: str) -> Any:
        headers = {**bearer(token), "Idempotency-Key": key}
        r = self.client.post(path, json=body, headers=headers)
        assert r.status_code in (200, 201), (path, r.status_code, r.text)
        return r.json()

    def send(self, rid: str, cmd: c.Command) -> dict[str, Any]:
        path, body, who = route(cmd)
        token = OPERATOR if who == "op" else self.tokens[getattr(cmd, "session_id", "")]
        doc: dict[str, Any] = self.post(path, body, token, rid)
        if isinstance(cmd, c.OpenSession):
            self.tokens[doc["session_id"]] = doc["token"]
        self.requests.append((path, body, token, rid))
        return doc


def test_every_endpoint_retried_after_settlement_and_a_restart_answers_the_same_and_moves_nothing(
    store: Store,
) -> None:
    clock = FakeClock()
    casino = open_app(store, clock)
    with TestClient(create_app(casino)) as client:
        http = Http(client)
        sent = play_everything(http.send, ticker(casino, clock))
        assert {type(cmd) for _, cmd, _ in sent} == set(casino.handlers) - RUNNER_ONLY
        before = raw_rows(store)
        for (path, body, token, key), (_, _, first) in zip(http.requests, sent, strict=True):
            assert http.post(path, body, token, key) == first, path
        assert raw_rows(store) == before
    casino.close()

    again = open_app(store)
    after_restart = raw_rows(store)
    with TestClient(create_app(again)) as client:
        retry = Http(client)
        for (path, body, token, key), (_, _, first) in zip(http.requests, sent, strict=True):
            assert retry.post(path, body, token, key) == first, path
    assert raw_rows(store) == after_restart
