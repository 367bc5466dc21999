"""The shared round lifecycle: start (stake + first event), act, settle, void, auto-complete.

A game plugs in through its typed adapter (:class:`games.adapter.GameAdapter`). The round's
state is never stored: it is rebuilt on every action by replaying the recorded decisions
from the seed, so a round resumes with the same cards after any crash or restart. Every
method works inside the caller's unit of work; nothing here saves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from games.adapter import GameAdapter, replay_recorded
from games.deal import ChosenCards, ChosenWire, Deal
from ledger.accounts import GameSession
from ledger.commands import Decide, StartRound
from ledger.contracts import RoundStatus
from ledger.errors import (
    AutoCompletionFailed,
    DecisionNotForThisGame,
    InsufficientFunds,
    InvalidRequest,
    RoundNotOpen,
)
from ledger.keys import Keyring
from ledger.results import RoundPlayed, RoundVoided
from ledger.rounds import Round, commitment, new_game_code, round_id_for, seal_seed, unseal_seed
from ledger.seamless import port
from ledger.seamless.wire import to_wire
from ledger.unit_of_work import UnitOfWork
from wallet.protocol import Transaction

P = TypeVar("P")
S = TypeVar("S")
D = TypeVar("D")
Clock = Callable[[], datetime]
SeedSource = Callable[[], bytes]
CardSource = Callable[[], ChosenWire | None]
"""Tests only: the chosen cards of the next round, by deck label (see :mod:`games.deal`);
None: that round is dealt from its seed."""
AnyAdapter = GameAdapter[Any, Any, Any]
"""An adapter looked up by a round's recorded game name: its types are the game's own."""
MAX_AUTOMATIC_STEPS = 100
"""More default decisions than any game needs to end a round (a double-up pick is the
longest chain); reaching it means the game's default action does not end its rounds."""


def round_played(rnd: Round, balance: int) -> RoundPlayed:
    """The round as it stands, with the session's ``balance`` after the step."""
    return RoundPlayed(
        round_id=str(rnd.id),
        code=rnd.code,
        game=rnd.game,
        status=rnd.status,
        stake=rnd.stake,
        staked=rnd.staked,
        payout=rnd.payout,
        outcome=rnd.outcome,
        view=dict(rnd.view),
        balance=balance,
        seed=rnd.seed,
        commitment=rnd.commitment,
    )


class Rounds:
    """Round lifecycle over the games in ``adapters`` (name -> adapter)."""

    def __init__(
        self,
        adapters: Mapping[str, AnyAdapter],
        keyring: Keyring,
        clock: Clock,
        seed_source: SeedSource,
        card_source: CardSource | None = None,
    ) -> None:
        self.adapters = adapters
        self.keyring = keyring
        self.clock = clock
        self.seed_source = seed_source
        self.card_source = card_source

    def adapter_of(self, rnd: Round) -> AnyAdapter:
        return self.adapters[rnd.game]

    def seed_of(self, rnd: Round) -> bytes:
        key = self.keyring.sealing_keys[rnd.sealing_kid]
        return unseal_seed(key, rnd.id, rnd.sealed_seed)

    def deal_of(self, rnd: Round) -> Deal:
        """What the round's cards come from: its seed, or the cards it records as chosen."""
        seed = self.seed_of(rnd)
        return seed if rnd.chosen_cards is None else ChosenCards.from_wire(seed, rnd.chosen_cards)

    def state_of(self, adapter: GameAdapter[P, S, D], rnd: Round) -> S:
        return replay_recorded(adapter, rnd.params, rnd.decisions, self.deal_of(rnd))

    def open_round(self, uow: UnitOfWork, session: GameSession) -> Round | None:
        return None if session.open_round is None else uow.round(session.open_round)

    def start(
        self, uow: UnitOfWork, session: GameSession, adapter: GameAdapter[P, S, D], params: P
    ) -> RoundPlayed:
        session.check_idle()
        stake = adapter.stake_of(params)  # validates the bet against the rules
        session.check_debit(stake)
        now = self.clock()
        terms = adapter.terms(params)
        # A seamless session's stake is the one its wallet accepted, under that round's code.
        authorised = port.main_stake(session, stake, lambda: new_game_code(terms.code_prefix, now))
        # One seed per command: a retried attempt (version conflict, code clash) deals the
        # same cards, so a deterministic seed source stays in step with the rounds.
        seed = uow.once("seed", self.seed_source)
        chosen = None if self.card_source is None else uow.once("cards", self.card_source)
        deal = seed if chosen is None else ChosenCards.from_wire(seed, chosen)
        state = adapter.start(params, deal)
        code = authorised or new_game_code(terms.code_prefix, now)
        rnd = Round(
            code=code,
            game=adapter.game,
            variant=terms.variant,
            rules_version=terms.rules_version,
            paytable_id=terms.paytable_id,
            session_id=str(session.id),
            player_id=session.player_id,
            currency=session.currency,
            stake=stake,
            params=adapter.write_params(params),
            started_at=now.isoformat(timespec="milliseconds"),
            commitment=commitment(seed),
            sealed_seed=seal_seed(self.keyring.sealing_key, round_id_for(code), seed),
            sealing_kid=self.keyring.sealing_kid,
            view=adapter.view(state),
            chosen_cards=deal.to_wire() if isinstance(deal, ChosenCards) else None,
        )
        uow.add(rnd)
        session.stake(code, stake)
        session.round_opened(code)
        self._maybe_settle(adapter, session, rnd, state, seed)
        return round_played(rnd, session.balance)

    def playing(self, uow: UnitOfWork, session: GameSession, game: str) -> Round:
        """The session's open round, which must be of ``game``."""
        session.check_open()
        rnd = self.open_round(uow, session)
        if rnd is None:
            raise RoundNotOpen(f"no round is open in session {session.id}", session_id=session.id)
        if rnd.game != game:
            raise DecisionNotForThisGame(
                f"the open round {rnd.code} is {rnd.game}: a {game} decision does not apply",
                session_id=session.id,
                game_code=rnd.code,
            )
        return rnd

    def act(
        self,
        session: GameSession,
        rnd: Round,
        adapter: GameAdapter[P, S, D],
        decision: D,
        automatic: bool = False,
    ) -> RoundPlayed:
        rnd.check_open()
        seed, deal = self.seed_of(rnd), self.deal_of(rnd)
        state = replay_recorded(adapter, rnd.params, rnd.decisions, deal)
        params = adapter.read_params(rnd.params)
        new_state = adapter.apply(params, state, decision, deal)
        added = adapter.staked(new_state) - adapter.staked(state)
        if added:
            port.added_stake(session, rnd.game, rnd.code, len(rnd.decisions) + 1, added)
            session.stake(rnd.code, added)
        rnd.acted(
            decision=adapter.write_decision(decision),
            automatic=automatic,
            stake_added=added,
            view=adapter.view(new_state),
        )
        self._maybe_settle(adapter, session, rnd, new_state, seed)
        return round_played(rnd, session.balance)

    def _maybe_settle(
        self,
        adapter: GameAdapter[P, S, D],
        session: GameSession,
        rnd: Round,
        state: S,
        seed: bytes,
    ) -> None:
        if not adapter.settled(state):
            return
        payout = adapter.payout(state)
        rnd.settled(
            payout=payout,
            outcome=adapter.outcome(state),
            staked=adapter.staked(state),
            seed=seed.hex(),
            view=adapter.view(state),
        )
        if payout:
            session.credit_win(rnd.code, payout)
            if session.seamless:  # the outbox: delivered until the wallet acknowledges
                credit = Transaction.credit(
                    session.player_id,
                    rnd.code,
                    payout,
                    session.currency,
                    reference=Transaction.debit(
                        session.player_id, rnd.code, "main", rnd.stake, session.currency
                    ).transaction_id,
                )
                session.wallet_call_queued(to_wire(credit))
        session.round_closed(rnd.code, {"game": rnd.game, "params": dict(rnd.params)})

    def complete_with_default(self, uow: UnitOfWork, session: GameSession) -> Round | None:
        """Finish an open round with the game's default action(s), recorded as automatic.
        Raises :class:`AutoCompletionFailed` if the round is still open after
        ``MAX_AUTOMATIC_STEPS`` (nothing is saved then)."""
        rnd = self.open_round(uow, session)
        if rnd is None:
            return None
        adapter = self.adapter_of(rnd)
        for _ in range(MAX_AUTOMATIC_STEPS):
            if rnd.status != RoundStatus.OPEN:
                return rnd
            state = self.state_of(adapter, rnd)
            self.act(session, rnd, adapter, adapter.default_decision(state), automatic=True)
        if rnd.status != RoundStatus.OPEN:
            return rnd
        raise AutoCompletionFailed(
            f"round {rnd.code} still open after {MAX_AUTOMATIC_STEPS} default actions",
            game_code=rnd.code,
        )

    def void(self, uow: UnitOfWork, code: str, reason: str, incident_id: str) -> RoundVoided:
        """Operator command after a malfunction: refund every stake, reverse any credited
        win, reveal the seed. Idempotent: voiding a voided round returns its void.

        The result says what moved (``refunded``, ``reversed_win``), where it landed
        (``landed_on``: the session while it is open, else the account its balance went
        back to) and that balance after the void (``landed_balance``)."""
        rnd = uow.round(code)
        session = uow.session(rnd.session_id)
        if session.seamless:
            return self._void_seamless(session, rnd, reason, incident_id)
        account = uow.account_by_id(session.account_id)
        if rnd.status == RoundStatus.VOIDED:
            on_account = rnd.code in account.voided_rounds
            return void_result(rnd, session, account.balance if on_account else None, True)
        refunded, reversed_win = rnd.staked, rnd.win_credited
        if session.closed:
            # The session's balance already went back to the account: adjust there.
            _check_void_covered(account.balance, refunded, reversed_win, rnd, account.player_id)
            if refunded:
                account.refund_round(rnd.code, refunded)
            if reversed_win:
                account.reverse_round_win(rnd.code, reversed_win)
        else:
            _check_void_covered(session.balance, refunded, reversed_win, rnd, None, session.id)
            if refunded:
                session.refund(rnd.code, refunded)
            if reversed_win:
                session.reverse_win(rnd.code, reversed_win)
        rnd.voided(
            reason=reason,
            incident_id=incident_id,
            refunded=refunded,
            reversed_win=reversed_win,
            seed=self.seed_of(rnd).hex(),
        )
        if session.open_round == rnd.code:
            session.round_closed(rnd.code, None)
        return void_result(rnd, session, account.balance if session.closed else None, False)

    def _void_seamless(
        self, session: GameSession, rnd: Round, reason: str, incident_id: str
    ) -> RoundVoided:
        """Void a seamless round: every accepted debit of it is rolled back at the wallet
        (queued in this transaction). A win already credited there is not reversible
        through the wallet: such a void is refused (settle it with the operator)."""
        if rnd.status == RoundStatus.VOIDED:
            return void_result(rnd, session, None, True)
        if rnd.win_credited:
            raise InvalidRequest(
                f"round {rnd.code} credited a win of {rnd.win_credited} at the operator's"
                " wallet; the wallet protocol cannot reverse it: settle it with the operator",
                game_code=rnd.code,
            )
        stakes = [("main", rnd.stake)] + [
            (f"{port.ADDED_STAGE.get(rnd.game, 'double')}:{n}", amount)
            for n, amount in rnd.added_stakes
        ]
        for stage, amount in stakes:
            debit = Transaction.debit(session.player_id, rnd.code, stage, amount, rnd.currency)
            session.refund(rnd.code, amount)
            session.wallet_call_queued(to_wire(Transaction.rollback(debit)))
        rnd.voided(
            reason=reason,
            incident_id=incident_id,
            refunded=rnd.staked,
            reversed_win=0,
            seed=self.seed_of(rnd).hex(),
        )
        if session.open_round == rnd.code:
            session.round_closed(rnd.code, None)
        return void_result(rnd, session, None, False)


def void_result(
    rnd: Round, session: GameSession, account_balance: int | None, again: bool
) -> RoundVoided:
    """A void's result: the round, its refund and reversal, and the balance they landed on
    (``account_balance`` when they went to the account, else None: the session's)."""
    return RoundVoided(
        round_id=str(rnd.id),
        code=rnd.code,
        game=rnd.game,
        status=rnd.status,
        stake=rnd.stake,
        staked=rnd.staked,
        payout=rnd.payout,
        outcome=rnd.outcome,
        view=dict(rnd.view),
        balance=session.balance,
        seed=rnd.seed,
        commitment=rnd.commitment,
        already_voided=again,
        refunded=getattr(rnd, "refunded", 0),
        reversed_win=getattr(rnd, "reversed_win", 0),
        landed_on="session" if account_balance is None else "account",
        landed_balance=session.balance if account_balance is None else account_balance,
    )


def _check_void_covered(
    balance: int,
    refunded: int,
    reversed_win: int,
    rnd: Round,
    player_id: str | None,
    session_id: object = None,
) -> None:
    """Refuse a void whose reversal the balance cannot cover even with the refund, quoting
    the balance as it stands (before the refund is added)."""
    if reversed_win <= balance + refunded:
        return
    where = "account" if player_id is not None else "session"
    raise InsufficientFunds(
        f"{where} balance {balance} cannot cover reversing the win {reversed_win} of round"
        f" {rnd.code} less its refunded stakes {refunded} (short by"
        f" {reversed_win - refunded - balance})",
        player_id=player_id,
        session_id=session_id,
        game_code=rnd.code,
    )


class AnyGame:
    """Handlers of the game-neutral commands: a game added through the registry needs no
    handler code of its own (its adapter reads its params and decisions)."""

    def __init__(self, rounds: Rounds, dedicated: Mapping[str, str]) -> None:
        self.rounds = rounds
        self.dedicated = dedicated
        """Games with their own commands (name -> where): their rounds start only there,
        since part of their params is the table's, not the player's (Red Dog's limits)."""

    def _adapter(self, game: object) -> AnyAdapter:
        adapter = self.rounds.adapters.get(game) if isinstance(game, str) else None
        if isinstance(game, str) and game in self.dedicated:
            raise InvalidRequest(f"{game} is played with its own commands: {self.dedicated[game]}")
        if adapter is None:
            raise InvalidRequest(
                f"no game {game!r} (expected one of {sorted(self.rounds.adapters)})"
            )
        return adapter

    def start(self, uow: UnitOfWork, cmd: StartRound) -> RoundPlayed:
        adapter = self._adapter(cmd.game)
        if not isinstance(cmd.params, Mapping):
            raise InvalidRequest(f"the params of a {cmd.game} round are a JSON object")
        session = uow.session(cmd.session_id)
        try:
            params = adapter.read_params(cmd.params)
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidRequest(f"invalid params for {cmd.game}: {e!r}") from None
        return self.rounds.start(uow, session, adapter, params)

    def decide(self, uow: UnitOfWork, cmd: Decide) -> RoundPlayed:
        adapter = self._adapter(cmd.game)
        session = uow.session(cmd.session_id)
        rnd = self.rounds.playing(uow, session, cmd.game)
        return self.rounds.act(session, rnd, adapter, adapter.read_decision(cmd.decision()))
