"""Sixty players at one live table against a real ``croupier serve`` (SQLite and
PostgreSQL), issue 28 (Must show, first item; and the last: no socket message leaks).

50 players on the table WebSocket and 10 on the SSE stream with REST commands play 10
rounds of a one-deck table (cut card at 25-30 %: a shoe lasts about two rounds, so the
rounds cross several shoe changes), with every bet command (chips on each bet type,
UNDO, UNDO ALL, REPEAT, 2x, ALL SIDE BETS, insurance), every decision the cards offer,
players who never decide (seed 002's automatic actions), and connections dropped and
resumed from their last id: before the betting deadline (the bets come back, or stand if
the refund came after the deadline) and after it (automatic decisions, the result seen
after resuming).

At the end every client's view is compared with the ledger's reads, not with the
client's own counts: its balance (``GET /v1/sessions/{id}``), every balance message
against the account statement's movements (same log position, kind, amount, balance),
its history (``GET /v1/accounts/{player}/history``) against the seats it was told of,
and every message of every round against ``GET /v1/table-rounds/{code}``: the cards
shown, each step, the dealer, the totals, its own seat's bets, decisions (automatic ones
included) and result. Every message is scanned: no card before the table shows it (each
shown card is the shoe's next one, re-derived from the seed revealed at the shoe's end),
no shoe seed before that, no other player's id or seat. ``audit-cli verify --pin
--balances`` passes on the store.

The server's runner runs on real time with short windows; clients wait for messages,
never for time, and nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_cli.main import main as audit_cli
from games.blackjack import shoe_from_seed
from ledger.tables.config import BET_TYPES, rules_of
from tests.integration.leak_scan import seed_needles
from tests.integration.stream_helpers import Event
from tests.integration.test_http_serve import launch
from tests.integration.test_table_e2e import _operator, _post
from tests.integration.test_table_socket_e2e import _sessions, _stop, _store
from tests.integration.test_table_stream import _cards, _new_cards
from tests.table_client import Received, SocketClient, TableClient

TABLE = "sixty"
SOCKETS, STREAMS = 50, 10
ROUNDS = 10
CONFIG = {
    "betting_ms": 2_000,
    "insurance_ms": 1_000,
    "step_ms": 1_000,
    "grace_ms": 200,
    "decks": 1,
    "penetration_permille": [250, 300],
    "settle_batch": 25,
}
PREFERENCES = [
    ["double", "hit", "stand"],
    ["cash-out", "stand"],
    ["split", "hit", "stand"],
    ["stand"],
    ["split", "double", "cash-out", "hit", "stand"],
]
TIMING_OUT = {9, 19, 29, 39, 49, 59}
"""Players who do not decide in every third round: seed 002's automatic actions decide
for them (in those rounds only, so that the other rounds' steps close as soon as every
seat has decided)."""
LOST_BEFORE = {3, 23, 53}
"""Players who drop their connection right after betting and resume after the deal:
from their third round on, in a round with more than a second left, until once their
bets come back (by their seventh round whatever the time left). Before the deadline
the bets are refunded; when the refund came after it (a loaded machine), the bets stood
and the runner decided: either way the client's view must be the ledger's."""
LOST_AFTER = {7: 3, 27: 5, 57: 4}
"""Player -> the round (its n-th seated) in which it drops after the deal and resumes
once the round has settled."""
ADDRESS_LIMITS = {
    "CROUPIER_STREAMS_PER_ADDRESS": "200",
    "CROUPIER_MAX_CONNECTIONS_PER_ADDRESS": "400",
}
"""Every client is on 127.0.0.1: the per-address caps are lifted for it (they are not
what is tested here)."""
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PLAYER_RE = re.compile(r"sixty-\d\d")


class Player:
    """One client's play, by its index: its bets, decisions, drops; what it saw."""

    def __init__(self, i: int, client: SocketClient | TableClient, shared: dict[str, Any]):
        self.i = i
        self.c = client
        self.shared = shared
        self.player_id = f"sixty-{i:02d}"
        self.seated: list[str] = []  # codes it had bets in when its last bet was answered
        self.answered: Counter[str] = Counter()  # action -> answers 200
        self.bet_in: set[str] = set()
        self.lost_before: list[str] = []
        self.lost_after: str | None = None
        self.refunded = False
        self.timed_out: list[str] = []  # rounds it let the runner decide for it

    async def act(self, action: str, body: dict[str, Any] | None = None) -> dict[str, Any] | None:
        r = await self.c.post(action, body)
        # 409: the window closed first, REPEAT with nothing to repeat, a bet past its limit
        assert r.status_code in (200, 409), (self.i, action, r.status_code, r.text)
        if r.status_code != 200:
            return None
        self.answered[action] += 1
        out: dict[str, Any] = r.json()
        return out

    async def bets(self) -> None:
        n, kind = len(self.seated), self.i % 8
        if self.i in LOST_BEFORE:  # one chip, at once: the drop must beat the deadline
            last = await self.act("bets", {"bet": "main", "amount": 100})
        elif kind == 0:
            last = await self.act("bets", {"bet": "main", "amount": 200})
            last = await self.act("all-side-bets") or last
        elif kind == 1:
            last = await self.act("bets", {"bet": "main", "amount": 100})
            await self.act("bets", {"bet": "perfect-pairs", "amount": 100})
            await self.act("undo")
            last = await self.act("bets", {"bet": "21+3", "amount": 100}) or last
        elif kind == 2:
            first = {"bet": "main", "amount": 300}
            last = await self.act("repeat") if n else await self.act("bets", first)
            if last and n % 3 == 2:
                last = await self.act("double") or last
        elif kind == 3:
            last = await self.act("bets", {"bet": "main", "amount": 100})
            await self.act("bets", {"bet": "bust-it", "amount": 100})
            last = await self.act("bets", {"bet": "hot-3", "amount": 100}) or last
        elif kind == 4:
            await self.act("bets", {"bet": "main", "amount": 300})
            await self.act("bets", {"bet": "hot-3", "amount": 100})
            await self.act("undo-all")
            last = await self.act("bets", {"bet": "main", "amount": 200})
            last = await self.act("bets", {"bet": "perfect-pairs", "amount": 100}) or last
        elif kind == 5:
            last = await self.act("bets", {"bet": "main", "amount": 200})
            await self.act("bets", {"bet": "21+3", "amount": 100})
            last = await self.act("double") or last
        elif kind == 6:
            last = await self.act("bets", {"bet": "main", "amount": 100})
            await self.act("all-side-bets")
            await self.act("undo")
            last = await self.act("undo") or last
        else:
            opening = {"bet": "main", "amount": 500}
            last = await self.act("repeat") if n else await self.act("bets", opening)
            if last and n % 2:
                last = await self.act("double") or last
        if last is not None and last["bets"]:
            self.seated.append(last["code"])

    async def decide(self, e: Received, number: int) -> None:
        if not e.data["options"]:
            return
        if self.i in TIMING_OUT and number % 3 == 0:
            if e.data["code"] not in self.timed_out:
                self.timed_out.append(e.data["code"])
            return
        offered = [o["decision"] for o in e.data["options"]]
        if "insure" in offered:
            await self.act("insurance", {"take": self.i % 2 == 0})
            return
        hand = e.data["hands"][e.data["active"]]
        for kind in PREFERENCES[self.i % len(PREFERENCES)]:
            if kind == "hit" and hand["total"] >= 17:
                continue
            if kind in offered:
                await self.act("decide", {"step": e.data["step"], "decision": kind})
                return

    async def play(self) -> None:
        await self.shared["all connected"].wait()
        number = 0
        while True:
            e = await self.c.next()
            if e.type == "round-opened":
                code, number = e.data["code"], e.data["number"]
                end = self.shared.setdefault("end", e.data["number"] + ROUNDS - 1)
                if e.data["number"] <= end and code not in self.bet_in:
                    self.bet_in.add(code)
                    await self.bets()
                    if self._lose_before(e, code):
                        self.lost_before.append(code)
                        await self._lost(("bets-closed", code))
            elif e.type == "options" and e.data["code"] in self.seated:
                await self.decide(e, number)
            elif e.type == "bets-cancelled":
                self.refunded = True
            elif e.type == "bets-closed" and self._lose_after(e.data["code"]):
                self.lost_after = e.data["code"]
                await self._lost(("round-settled", e.data["code"]))
            if e.type in ("bets-closed", "round-settled"):
                key = (e.type, e.data["code"])
                self.shared["events"].setdefault(key, asyncio.Event()).set()
                if e.type == "round-settled" and e.data["number"] == self.shared.get("end"):
                    return

    def _lose_after(self, code: str) -> bool:
        n = LOST_AFTER.get(self.i)
        return code in self.seated and n == len(self.seated) and self.lost_after is None

    def _lose_before(self, opened: Received, code: str) -> bool:
        if self.i not in LOST_BEFORE or len(self.seated) < 3 or code not in self.seated:
            return False
        if self.refunded:
            return False
        left = datetime.fromisoformat(opened.data["deadline"]).timestamp() - time.time()
        return left > 1.0 or (len(self.seated) >= 7 and not self.lost_before)

    async def _lost(self, until: tuple[str, str]) -> None:
        """Drop the connection; resume from the last id once the table (as the other
        clients see it) has reached ``until``."""
        await self.c.close_stream()
        waiter = self.shared["events"].setdefault(until, asyncio.Event())
        await asyncio.wait_for(waiter.wait(), 90)
        self.c.open()


async def play(base: str, sessions: list[tuple[str, str]]) -> list[Player]:
    shared: dict[str, Any] = {"events": {}, "all connected": asyncio.Event()}
    clients: list[SocketClient | TableClient] = [
        (SocketClient if i < SOCKETS else TableClient)(base, TABLE, sid, token)
        for i, (sid, token) in enumerate(sessions)
    ]
    players = [Player(i, c, shared) for i, c in enumerate(clients)]
    try:
        for c in clients:
            c.open()
        async with asyncio.timeout(120):
            while not all(c.connected.is_set() for c in clients):
                for c in clients:  # a refused connection fails the test at once
                    if c._task is not None and c._task.done():
                        c._task.result()
                await asyncio.sleep(0.05)
        shared["all connected"].set()
        await asyncio.wait_for(asyncio.gather(*(p.play() for p in players)), 240)
    finally:
        for c in clients:
            await c.aclose()
    return players


class Ledger:
    """The ledger's reads through the operator's API, made once each, eight at a time."""

    def __init__(self, op: httpx.Client, players: list[Player]) -> None:
        self.op = op
        codes = sorted(
            {e.data["code"] for p in players for e in p.c.events if e.type == "round-opened"}
        )
        with ThreadPoolExecutor(8) as pool:

            def read(urls: list[str]) -> list[Any]:
                return list(pool.map(self.get, urls))

            rounds = read([f"/v1/table-rounds/{code}" for code in codes])
            self.rounds = dict(zip(codes, rounds, strict=True))
            sessions = read([f"/v1/sessions/{p.c.session}" for p in players])
            self.sessions = {p.c.session: got for p, got in zip(players, sessions, strict=True)}
            history = read([f"/v1/accounts/{p.player_id}/history" for p in players])
            self.history = {p.i: got for p, got in zip(players, history, strict=True)}
            statements = list(pool.map(self.statement, players))
            self.statements = {p.i: got for p, got in zip(players, statements, strict=True)}

    def get(self, url: str, **query: Any) -> Any:
        r = self.op.get(url, params=query)
        assert r.status_code == 200, (url, r.text)
        return r.json()

    def round(self, code: str) -> dict[str, Any]:
        found: dict[str, Any] = self.rounds[code]
        return found

    def seat(self, code: str, session: str) -> dict[str, Any] | None:
        mine = [s for s in self.round(code)["seat_list"] if s["session_id"] == session]
        assert len(mine) <= 1
        return mine[0] if mine else None

    def statement(self, p: Player) -> list[dict[str, Any]]:
        """The player's movements, the log read at least up to the last id it got."""
        at_least = max(e.id for e in p.c.events if e.id is not None)
        lines: list[dict[str, Any]] = []
        after = 0
        while True:
            url = f"/v1/accounts/{p.player_id}/statement"
            page = self.get(url, after=after, limit=1000, at_least=at_least)
            lines += page["lines"]
            after = page["next_after"]
            if after is None:
                return lines


def by_round(events: list[Received]) -> dict[str, list[Received]]:
    out: dict[str, list[Received]] = {}
    for e in events:
        if "code" in e.data:
            out.setdefault(e.data["code"], []).append(e)
    return out


def last_bets(seen: list[Received]) -> dict[str, int]:
    bets = [e.data["bets"] for e in seen if e.type in ("bet-accepted", "bet-undone")]
    return bets[-1] if bets else {}


def check_round(p: Player, code: str, seen: list[Received], ledger: Ledger) -> None:
    """Every message of one round a client got, against the round as the ledger has it."""
    d = ledger.round(code)
    where = (p.i, code)
    of = {t: [e.data for e in seen if e.type == t] for t in {e.type for e in seen}}
    [opened] = of["round-opened"]
    assert (opened["number"], opened["shoe"], opened["shoe_position"], opened["started_at"]) == (
        d["round"],
        d["shoe"],
        d["shoe_position"],
        d["started_at"],
    ), where
    [dealt] = of["bets-closed"]
    assert dealt["player_cards"] == d["player_cards"] and dealt["up"] == d["dealer_cards"][0]
    phases = [ph[0] for ph in d["phases"]]
    assert len(of.get("insurance-closed", [])) == phases.count("insurance"), where
    steps = of.get("step-closed", [])
    assert len(steps) == sum(ph.startswith("step-") for ph in phases), where
    assert [s["card"] for s in steps if s["card"]] == d["step_cards"], where
    holes = [x["hole"] for x in of.get("insurance-closed", []) if x["hole"]]
    draws = []
    for played in of.get("dealer-played", []):
        holes.append(played["hole"])
        draws += played["draws"]
    assert [d["dealer_cards"][0], *holes[:1], *draws] == d["dealer_cards"], where
    [settled] = of["round-settled"]
    assert (settled["seats"], settled["staked"], settled["returned"]) == (
        d["seats"],
        d["totals"]["staked"],
        d["totals"]["returned"],
    ), where
    seat = ledger.seat(code, p.c.session)
    assert bool(of.get("seat-opened")) == (seat is not None), where
    if seat is None:
        return
    bets = [e.data["bets"] for e in seen if e.type in ("bet-accepted", "bet-undone")]
    if seat["status"] == "cancelled":
        assert of["bets-cancelled"], where
        assert "seat-settled" not in of, where
        return
    if not seat["dealt"]:  # every chip taken back before the deal: nothing to settle
        assert not seat["bets"] and not bets[-1] and "seat-settled" not in of, where
        return
    assert "bets-cancelled" not in of and bets and bets[-1] == seat["bets"], where
    automatic = {
        int(step): kind
        for step, acts in d["automatic"].items()
        for sid, kind, _ in acts
        if sid == seat["seat_id"]
    }
    # a decision of the seat's own (the runner's automatic ones are the round's)
    own = {int(k): v["decision"] for k, v in seat["decisions"].items() if int(k) not in automatic}
    assert {x["step"]: x["kind"] for x in of.get("decided", [])} == own, where
    ledger_decisions = {
        **{k: (v["decision"], v["automatic"] is not None) for k, v in seat["decisions"].items()},
        **{str(k): (v, True) for k, v in automatic.items()},
    }
    [result] = of["seat-settled"]
    assert result["result"] == seat["result"] and seat["status"] == "settled", where
    told = {str(x["step"]): (x["kind"], x["automatic"]) for x in result["decisions"]}
    assert told == ledger_decisions, where


def check_client(p: Player, ledger: Ledger, players: list[Player]) -> None:
    c = p.c
    ids = [e.id for e in c.events if e.id is not None]
    assert len(ids) == len(set(ids)) and ids == sorted(ids), ("repeated or out of order", p.i)
    session = ledger.sessions[c.session]
    balances = [e for e in c.events if e.type == "balance"]
    assert balances and balances[-1].data["balance"] == session["balance"], p.i
    # every movement of the session's money is a message, at the same log position
    moved = [
        (x["seq"], x["kind"], abs(x["amount"]), x["session_balance"])
        for x in ledger.statements[p.i]
        if x["ledger"] == "session" and x["session_id"] == c.session
    ]
    told = [(e.id, e.data["movement"], e.data["amount"], e.data["balance"]) for e in balances]
    assert told == moved, p.i
    rounds = by_round(c.events)
    history = ledger.history[p.i]["games"]
    sat = {code for code, seen in rounds.items() if any(e.type == "seat-opened" for e in seen)}
    # a seat whose every chip was taken back before the deal played no game
    emptied = {code for code in sat if not last_bets(rounds[code])}
    assert {g["code"] for g in history} == sat - emptied, (p.i, emptied)
    for g in history:
        told_of = {e.type: e.data for e in rounds[g["code"]]}
        assert g["bets"] == last_bets(rounds[g["code"]]), (p.i, g)
        if g["status"] == "settled":
            result = told_of["seat-settled"]["result"]
            assert (g["stakes"], g["wins"]) == (result["staked"], result["returned"]), p.i
        elif g["status"] == "cancelled":
            assert "bets-cancelled" in told_of, (p.i, g)
        else:
            raise AssertionError((p.i, g))
    end = p.shared["end"]
    for code, seen in rounds.items():
        if any(e.type == "round-opened" and e.data["number"] <= end for e in seen):
            check_round(p, code, seen, ledger)
    messages = messages_of(c)
    assert leaks(p, messages, players, ledger) == [], p.i
    if p.i in (0, SOCKETS):  # the scan can fail: a card before its time, another's seat
        first = next(i for i, m in enumerate(messages) if m.type == "bets-closed")
        code, later = messages[first].data["code"], ledger.round(messages[first].data["code"])
        hole = later["dealer_cards"][1]
        planted = Event(None, "chat", {"text": hole}, json.dumps({"text": hole}))
        assert leaks(p, [*messages[: first + 1], planted], players, ledger) != []
        other = next(s for s in later["seat_list"] if s["session_id"] != c.session)
        planted = Event(None, "chat", {}, json.dumps({"seat": other["seat_id"], "code": code}))
        assert leaks(p, [*messages, planted], players, ledger) != []


def messages_of(c: SocketClient | TableClient) -> list[Event]:
    """Every message a client got as it came: each line of each socket frame (answers
    and heartbeats too), or each stream event's data."""
    if isinstance(c, SocketClient):
        out = []
        for frame in c.frames:
            for line in frame.split("\n"):
                m = json.loads(line)
                out.append(Event(m.get("id"), m["type"], m, line))
        return out
    return [Event(e.id, e.type, e.data, json.dumps(e.data)) for e in c.events]


def leaks(p: Player, messages: list[Event], players: list[Player], ledger: Ledger) -> list[str]:
    """Each message that shows a card before the table shows it (or not as the shoe's
    next card), a shoe's seed before the shoe is done, or another player's session,
    seat or name."""
    found: list[str] = []
    revealed = {m.data["shoe"]: m.data["seed"] for m in messages if m.type == "shoe-revealed"}
    rules = rules_of(next(iter(ledger.rounds.values()))["config"])
    shoes = {n: shoe_from_seed(rules, bytes.fromhex(seed)) for n, seed in revealed.items()}
    sealed = {n: seed_needles(bytes.fromhex(seed)) for n, seed in revealed.items()}
    others = {q.c.session for q in players if q is not p} | {
        s["seat_id"]
        for d in ledger.rounds.values()
        for s in d["seat_list"]
        if s["session_id"] != p.c.session
    }
    shown: Counter[str] = Counter()
    start = shoe_no = step_cards = 0
    for i, m in enumerate(messages):
        where = f"message {i} ({m.type}) of player {p.i}"
        if m.type == "round-opened":
            shown, start, shoe_no = Counter(), m.data["shoe_position"], m.data["shoe"]
            step_cards = 0
        new = _new_cards(m, step_cards)
        step_cards += m.type == "step-closed" and bool(m.data["card"])
        shoe = shoes.get(shoe_no)
        for position, card in new:
            if shoe is not None and str(shoe.cards[start + position]) != card:
                found.append(f"{where}: {card} is not the shoe's card {start + position}")
        shown.update(c for _, c in new)
        if _cards(m.raw) - shown:
            found.append(f"{where}: names {sorted(_cards(m.raw) - shown)}, not shown yet")
        if m.type == "shoe-revealed":
            sealed.pop(m.data["shoe"])
        for n, needles in sealed.items():
            found += [f"{where}: shoe {n}'s {k}" for k, v in needles.items() if v in m.raw.encode()]
        if set(UUID_RE.findall(m.raw)) & others:
            found.append(f"{where}: another player's session or seat")
        if set(PLAYER_RE.findall(m.raw)) - {p.player_id}:
            found.append(f"{where}: another player's name")
    return found


def check_table(players: list[Player], ledger: Ledger) -> None:
    """What the run covered, read from the ledger."""
    seats = [s for d in ledger.rounds.values() for s in d["seat_list"]]
    assert {bet for s in seats for bet in s["bets"]} == set(BET_TYPES)
    answered = sum((p.answered for p in players), Counter())
    for action in ("bets", "undo", "undo-all", "repeat", "double", "all-side-bets", "decide"):
        assert answered[action], f"no {action} was accepted"
    chosen = {v["decision"] for s in seats for v in s["decisions"].values() if not v["automatic"]}
    offered = {
        o["decision"]
        for p in players
        for e in p.c.events
        if e.type == "options" and p.i not in TIMING_OUT
        for o in e.data["options"]
    }
    assert {"hit", "stand", "double", "cash-out"} <= chosen
    assert offered - {"insure", "no-insurance"} <= chosen, "a decision offered, never taken"
    if {"insure", "no-insurance"} & offered:
        assert {"insure", "no-insurance"} <= chosen and answered["insurance"]
    timed_out = [(code, p.c.session) for p in players for code in p.timed_out]
    assert timed_out, "nobody let the runner decide"
    for code, session in timed_out:
        seat = ledger.seat(code, session)
        assert seat is not None and any(
            sid == seat["seat_id"]
            for acts in ledger.round(code)["automatic"].values()
            for sid, _, _ in acts
        ), (code, session)  # seed 002: the runner's automatic action
    shoes = {d["shoe"] for d in ledger.rounds.values()}
    assert len(shoes) >= 3, "ten rounds of a one-deck shoe cross at least two shoe changes"
    for d in ledger.rounds.values():
        if d["shoe_seed"] is not None:
            assert hashlib.sha256(bytes.fromhex(d["shoe_seed"])).hexdigest() == d["shoe_commitment"]
    for p in players:
        if p.i in LOST_AFTER:
            assert p.lost_after is not None and p.c.streams_opened == 2, p.i
            seat = ledger.seat(p.lost_after, p.c.session)
            assert seat is not None and not any(
                v["automatic"] is None for v in seat["decisions"].values()
            ), p.i  # away: nothing it decided itself
        if p.i in LOST_BEFORE:
            assert p.lost_before and p.c.streams_opened == 1 + len(p.lost_before), p.i


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_sixty_players_over_sockets_and_streams_see_what_the_ledger_holds(
    backend: str, tmp_path: Path
) -> None:
    db, env = _store(backend, tmp_path)
    env.update(ADDRESS_LIMITS)
    base, _, proc = launch(tmp_path, startup_seconds=180, **env)
    try:
        op = httpx.Client(base_url=base, headers=_operator(tmp_path), timeout=30)
        sessions = _sessions(op, [f"sixty-{i:02d}" for i in range(SOCKETS + STREAMS)])
        _post(op, "/v1/tables", {"table": TABLE, "currency": "EUR", "config": CONFIG})
        players = asyncio.run(play(base, sessions))
        ledger = Ledger(op, players)
        for p in players:
            check_client(p, ledger, players)
        check_table(players, ledger)
    finally:
        out = _stop(proc)
    pin = out.split("audit-cli verify --pin …): ", 1)[1].split()[0]
    keys = str(tmp_path / "keys" / "keyring.json")
    args = ["verify", "--db", db, "--pin", pin, "--keys", keys, "--balances", "--jobs", "1"]
    assert audit_cli(args) == 0
