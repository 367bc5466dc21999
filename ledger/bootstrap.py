"""The composition root: builds the Casino application and composes its handlers.

Everything from outside the process that the ledger depends on is injected here: the
settings and keys, the clock, the seed source (the OS CSPRNG in production; tests and the
certification simulation pass deterministic ones), the games and, for tests only, a card
source that chooses the cards of the rounds dealt (:mod:`games.deal`; recorded in each
such round, which is then not a certified round). A reader follows a
request by names: route -> command (:mod:`ledger.commands`) -> the handler registered
below (once per command type) -> the aggregates' events -> the result (:mod:`ledger.results`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from games import registry
from games.adapter import GameAdapter
from games.red_dog.adapter import GAME as RED_DOG
from games.red_dog.adapter import RedDogAdapter
from games.video_poker.adapter import GAME as VIDEO_POKER
from games.video_poker.adapter import VideoPokerAdapter
from ledger import commands as c
from ledger.accounts import Account, GameSession
from ledger.banking import Banking
from ledger.casino import Casino
from ledger.chat import BanChat, Chat, HideChat, MuteChat, PostChat
from ledger.commands import Route
from ledger.keys import Keyring
from ledger.play import AnyGame, CardSource, Clock, Rounds, SeedSource
from ledger.player_settings import ChangeSettings, change_settings
from ledger.presence import HoldTable, Presence, ReleaseTable, WorkerBeat
from ledger.red_dog import RedDogTable
from ledger.rounds import new_seed
from ledger.sessions import Sessions
from ledger.settings import Settings
from ledger.snapshots import SnapshotStore, Snapshotter
from ledger.tables.aggregates import Table
from ledger.tables.arrivals import Arrivals
from ledger.tables.context import (
    ShoeMaker,
    TableCache,
    TablePorts,
    last_position,
    seat_index,
)
from ledger.tables.holds import holds_for
from ledger.tables.operator import Operator
from ledger.tables.players import Players, guard_close
from ledger.tables.runner import RunnerSteps
from ledger.tables.views import LiveStatistics
from ledger.video_poker import VideoPokerMachine
from wallet.client import WalletClient
from wallet.delivery import RetryPolicy


def system_clock() -> datetime:
    return datetime.now(UTC)


def bootstrap(
    settings: Settings | None = None,
    keyring: Keyring | None = None,
    *,
    seed_source: SeedSource = new_seed,
    clock: Clock = system_clock,
    games: Mapping[str, GameAdapter[Any, Any, Any]] | None = None,
    cards: CardSource | None = None,
    extra_handlers: Callable[[Rounds], Iterable[Route[Any, Any]]] | None = None,
    application: type[Casino] = Casino,
    shoe_maker: ShoeMaker | None = None,
    wallets: Mapping[str, WalletClient] | None = None,
    wallet_retry: RetryPolicy | None = None,
) -> Casino:
    """A ready Casino. ``games`` adds adapters (name -> adapter) beside the built-in ones;
    ``extra_handlers`` adds the handlers of commands of such games (``Command.handled_by``;
    tests register a toy game this way). ``cards`` (tests only) chooses each new round's
    cards: every round it deals records them, and ``audit-cli round`` reports such a round
    as not certified. ``shoe_maker`` turns a live table's shoe seed into its cards (the
    tests deal chosen cards with it; by default :func:`games.blackjack.shoe_from_seed`).
    The live blackjack tables' handlers (:mod:`ledger.tables`) are always composed.
    ``wallets`` (operator -> client; else built from ``settings.wallets``) composes
    seamless mode (:mod:`ledger.seamless`) when any operator has a seamless wallet."""
    app = application(settings, keyring)
    adapters = {**registry.adapters(), **(games or {})}
    red_dog, video_poker = adapters[RED_DOG], adapters[VIDEO_POKER]
    assert isinstance(red_dog, RedDogAdapter) and isinstance(video_poker, VideoPokerAdapter)
    rounds = Rounds(adapters, app.keyring, clock, seed_source, cards)
    dedicated = {RED_DOG: "red-dog/bet, raise, see, repeat", VIDEO_POKER: "video-poker/deal, ..."}
    banking, sessions, any_game = Banking(), Sessions(rounds), AnyGame(rounds, dedicated)
    table, machine = RedDogTable(rounds, red_dog), VideoPokerMachine(rounds, video_poker)
    # The live blackjack tables (every command has its HTTP route, api/tables.py and
    # api/table_operator.py; tests/integration/test_retry_after_settlement.py checks it).
    # Its player's, runner's and operator's handlers share one cache of shoes and round
    # states; the decision statistics one round's players read are kept by the application.
    ports = TablePorts(
        app.keyring,
        clock,
        seed_source,
        seat_index(app),
        last_position(app),
        **({} if shoe_maker is None else {"shoe_maker": shoe_maker}),
        chip_moves_per_round=app.settings.chip_moves_per_round,
        peek=app.cached,
    )
    cache = TableCache()
    players, runner, operator = (
        Players(ports, cache),
        RunnerSteps(ports, cache),
        Operator(ports, cache),
    )
    app.table_statistics = LiveStatistics(app)
    app.table_arrivals = Arrivals(clock)
    app.table_holds = holds_for(app.recorder, app.table_arrivals)
    if app.table_holds is not None:
        app.on_close.append(app.table_holds.close)
    presence = Presence(players.seat_connected, players.seat_disconnected)
    settings = app.settings
    chat = Chat(
        clock,
        operator.table,
        settings.chat_max_chars,
        settings.chat_messages,
        settings.chat_window_seconds,
    )
    app.handlers.add(
        c.OpenAccount.handled_by(banking.open_account),
        c.Deposit.handled_by(banking.deposit),
        c.Withdraw.handled_by(banking.withdraw),
        c.OpenSession.handled_by(sessions.open_session),
        # Refused while the session is seated in a live table round (it settles by itself).
        c.CloseSession.handled_by(guard_close(sessions.close_session)),
        c.VoidRound.handled_by(sessions.void_round),
        c.RedDogBet.handled_by(table.bet),
        c.RedDogRepeat.handled_by(table.repeat),
        c.RedDogRaise.handled_by(table.raise_bet),
        c.RedDogSee.handled_by(table.see),
        c.VideoPokerDeal.handled_by(machine.deal),
        c.VideoPokerHold.handled_by(machine.decide),
        c.VideoPokerDraw.handled_by(machine.draw),
        c.VideoPokerCollect.handled_by(machine.decide),
        c.VideoPokerDouble.handled_by(machine.decide),
        c.VideoPokerHalfDouble.handled_by(machine.decide),
        c.VideoPokerPick.handled_by(machine.decide),
        c.StartRound.handled_by(any_game.start),
        c.Decide.handled_by(any_game.decide),
        ChangeSettings.handled_by(change_settings),
        PostChat.handled_by(chat.post),
        MuteChat.handled_by(chat.mute),
        BanChat.handled_by(chat.ban),
        HideChat.handled_by(chat.hide),
        *players.routes(),
        *runner.routes(),
        *operator.routes(),
        # a seat's connections across processes (seed 002 "Disconnessione", issue 28)
        HoldTable.handled_by(presence.hold),
        ReleaseTable.handled_by(presence.release),
        WorkerBeat.handled_by(presence.beat),
    )
    if extra_handlers is not None:
        app.handlers.add(*extra_handlers(rounds))
    if isinstance(app.snapshots, SnapshotStore):
        # The long-lived aggregates (DESIGN §1.2): a player's account, a game session, a
        # live table; rounds, shoes and request records are short and never snapshotted.
        every = app.settings.snapshot_every
        app.snapshotter = Snapshotter(app.snapshots, every, (Account, GameSession, Table))
    if wallets is None:
        from ledger.seamless.config import seamless_clients

        wallets = seamless_clients(app.settings.wallets)
    if wallets:
        from ledger.seamless.compose import compose

        app.seamless = compose(app, wallets, wallet_retry)
    app.serving()
    return app
