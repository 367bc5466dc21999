"""``croupier demo``'s live table part: a few players at an Infinite Blackjack table for a
few rounds, on the system clock (short windows; a step closes as soon as every player has
decided), then their sessions close. Every command is idempotent by its request id, so
re-running a ``--tag`` replays the recorded answers (rounds already played are not
waited for again)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from games.blackjack import Phase
from ledger.casino import Casino
from ledger.errors import AccountNotFound
from ledger.tables import commands as tc
from ledger.tables import views as queries
from ledger.tables.errors import BettingClosed, StepClosed, TableExists, TableNotFound
from ledger.tables.runner import TableRunner
from ledger.tables.views import seat_history

DEMO_TABLE = "ibj-demo"
DEMO_CONFIG: dict[str, Any] = {
    "betting_ms": 1_500,
    "insurance_ms": 1_000,
    "step_ms": 1_000,
    "grace_ms": 100,
}
PLAYERS = ("ann", "bob", "cat")
ROUNDS = 3
TIMEOUT_SECONDS = 60.0


def _in_play(seat: dict[str, Any]) -> dict[str, Any] | None:
    """The seat's hand in play: ``active_hand`` (None before the deal), or its last hand
    once every hand is done (``active_hand == len(hands)``: a player blackjack still has
    the insurance question when the dealer shows an ace)."""
    hands: list[dict[str, Any]] = seat["hands"]
    if not hands:
        return None
    return hands[min(seat["active_hand"] or 0, len(hands) - 1)]


def _choose(options: list[dict[str, Any]], total: int) -> str:
    """A plain player: no insurance; stand on 17 or more, else hit (stand if no hit)."""
    offered = [o["decision"] for o in options]
    if "no-insurance" in offered:
        return "no-insurance"
    if total < 17 and "hit" in offered:
        return "hit"
    return "stand" if "stand" in offered else offered[0]


def play(
    app: Casino,
    tag: str,
    prefix: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> dict[str, Any]:
    """Seat :data:`PLAYERS` (accounts ``{prefix}-ann`` ...) for :data:`ROUNDS` rounds;
    return each round's code and every player's bets and payout. ``clock`` is the
    runner's and ``sleep`` waits (tests pass a fake clock and a sleep that moves it on;
    the application's own clock must be the same)."""
    with contextlib.suppress(TableExists):
        app.command(f"demo-create-{DEMO_TABLE}", tc.CreateTable(DEMO_TABLE, "EUR", DEMO_CONFIG))
    app.command(f"{tag}-resume", tc.ResumeTable(DEMO_TABLE))  # a previous demo paused it
    runner = TableRunner(app, DEMO_TABLE, clock)
    sessions: dict[str, str] = {}
    for name in PLAYERS:
        player = f"{prefix}-{name}"
        try:
            app.account_balance(player)
        except AccountNotFound:
            app.open_account(f"{tag}-{name}-open", player, "EUR")
        app.deposit(f"{tag}-{name}-deposit", player, 10_000)
        sessions[name] = app.open_session(f"{tag}-{name}-session", player, 5_000).session_id
    played = []
    for n in range(1, ROUNDS + 1):
        code = _one_round(app, runner, tag, n, sessions, sleep)
        played.append(
            {"code": code, "seats": {name: _seat(app, code, sid) for name, sid in sessions.items()}}
        )
    closed = {
        name: app.close_session(f"{tag}-{name}-close", sid).final_balance
        for name, sid in sessions.items()
    }
    _pause(app, runner, tag)
    return {"table": DEMO_TABLE, "rounds": played, "final_balances": closed}


def _seat(app: Casino, code: str, session_id: str) -> dict[str, Any]:
    try:
        seat = seat_history(app, DEMO_TABLE, code, session_id)
    except TableNotFound:  # sat this round out (its bet came after the window)
        return {"status": "sat-out", "bets": {}, "staked": 0, "paid": 0}
    return {k: seat[k] for k in ("status", "bets", "staked", "paid")}


def _pause(app: Casino, runner: TableRunner, tag: str) -> None:
    """Leave the demo table paused in its next round's betting window: a server started on
    this store runs every table, and an unpaused demo table (1.5 s windows, nobody seated)
    would go on for ever."""
    reason = "croupier demo finished (resume the table to play on)"
    for attempt in range(100):
        runner.tick()  # the runner opens the next round once the last one has settled
        done = app.command(f"{tag}-pause-{attempt}", tc.PauseTable(DEMO_TABLE, reason))
        if done.paused:
            return
    raise TimeoutError("the demo table could not be paused")


def _one_round(
    app: Casino,
    runner: TableRunner,
    tag: str,
    n: int,
    sessions: dict[str, str],
    sleep: Callable[[float], None],
) -> str:
    ticks = int(TIMEOUT_SECONDS / 0.05)  # a round that takes longer is stuck
    code = None
    while code is None:  # wait for a betting window (the previous round may be finishing)
        runner.tick()
        view = queries.session_view(app, DEMO_TABLE, next(iter(sessions.values())))
        rnd = view["round"]
        if rnd is not None and rnd["phase"] == "betting":
            code = rnd["code"]
        elif (ticks := ticks - 1) < 0:
            raise TimeoutError("the demo table opened no betting window")
        else:
            sleep(0.05)
    for i, (name, sid) in enumerate(sessions.items()):
        bet = tc.PlaceBet(sid, DEMO_TABLE, "main", 200)
        placed = _bet(app, runner, f"{tag}-{name}-r{n}-bet", bet, code)
        if placed is None:
            continue  # the window closed under load: this player sits this round out
        # a replayed demo (same tag) is answered the round its bets were recorded in
        code = placed.code or code
        if i == 0:
            with contextlib.suppress(BettingClosed):  # side bets are a bonus
                app.command(f"{tag}-{name}-r{n}-sides", tc.AllSideBets(sid, DEMO_TABLE))
    rnd = queries.find_round(app, code)
    while not rnd.closed:
        if (ticks := ticks - 1) < 0:
            raise TimeoutError(f"the demo round {code} did not finish")
        for name, sid in sessions.items():
            view = queries.session_view(app, DEMO_TABLE, sid)
            hand = None if view["seat"] is None else _in_play(view["seat"])
            if view["options"] and view["round"]["code"] == code and hand is not None:
                decision = _choose(view["options"], hand["total"])
                step = view["round"]["step"]
                request = f"{tag}-{name}-r{n}-s{step}-h{len(hand['cards'])}"
                # Under load the step's 1 s may be over already: the runner then takes
                # seed 002's automatic action for this seat.
                with contextlib.suppress(StepClosed):
                    app.command(request, tc.TableDecide(sid, DEMO_TABLE, step, decision))
        runner.tick()
        sleep(0.05)
        rnd = queries.find_round(app, code)
    return str(code)


def _bet(
    app: Casino, runner: TableRunner, request: str, cmd: tc.PlaceBet, code: str
) -> tc.SeatChanged | None:
    """Place the main bet in round ``code``, or None: this player sits the round out. On a
    loaded machine the 1.5 s window can close before it lands (``betting-closed``): the
    runner then either leaves the round waiting for a first bet (nobody's had landed: the
    bet is placed again, and starts the timer) or deals without this player.

    A bet names no round: it lands in the table's current one. So it is sent only while
    round ``code`` takes bets: the runner's tick after a refused bet may have dealt it,
    played it out and opened the next round (a shared hand with no choice in it, a
    blackjack, settles at the deal), and a bet sent then (placed again, or the next
    player's) landed in that next round; the demo followed it there and reported that
    round as this one (the others' round in no report)."""
    for _ in range(3):
        if queries.find_round(app, code).phase is not Phase.BETTING:
            return None  # dealt without this player (and maybe played out already)
        try:
            return app.command(request, cmd)
        except BettingClosed:
            runner.tick()
    return None
