"""The shared round lifecycle: start (stake + first event), act, settle, void, auto-complete.

A game plugs in through a small adapter over its pure engine. The round's state is never
stored: it is rebuilt on every action by replaying the recorded decisions from the seed,
so a round resumes with the same cards after any crash or restart.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from eventsourcing.domain import Aggregate

from ledger.accounts import Account, GameSession
from ledger.errors import InvalidRequest, RoundNotFound
from ledger.rounds import (
    Round,
    commitment,
    new_game_code,
    round_id_for,
    seal_seed,
    unseal_seed,
)

if TYPE_CHECKING:
    from ledger.casino import Casino

Result = dict[str, Any]


class GameAdapter(Protocol):
    game: str
    code_prefix: str

    def describe(self, params: dict[str, Any]) -> tuple[str, str, str]:
        """(variant, rules version, paytable id) of a round with these params."""

    def stake_of(self, params: dict[str, Any]) -> int: ...

    def start(self, params: dict[str, Any], seed: bytes) -> Any: ...

    def apply(
        self, params: dict[str, Any], state: Any, decision: list[Any], seed: bytes
    ) -> Any: ...

    def replay(self, params: dict[str, Any], decisions: list[list[Any]], seed: bytes) -> Any: ...

    def default_decision(self, state: Any) -> list[Any]: ...

    def staked(self, state: Any) -> int: ...

    def settled(self, state: Any) -> bool: ...

    def payout(self, state: Any) -> int: ...

    def outcome(self, state: Any) -> str: ...

    def view(self, state: Any) -> dict[str, Any]: ...


def round_result(rnd: Round, balance: int) -> Result:
    return {
        "round_id": str(rnd.id),
        "code": rnd.code,
        "game": rnd.game,
        "status": rnd.status,
        "stake": rnd.stake,
        "staked": rnd.staked,
        "payout": rnd.payout,
        "outcome": rnd.outcome,
        "view": dict(rnd.view),
        "balance": balance,
        "seed": rnd.seed,
        "commitment": rnd.commitment,
    }


class RoundCommands:
    """Mixed into :class:`~ledger.casino.Casino`."""

    adapters: dict[str, GameAdapter]

    def _seed_of(self: Casino, rnd: Round) -> bytes:  # type: ignore[misc]  # mixin method typed against the composed Casino
        key = self.keyring.sealing_keys[rnd.sealing_kid]
        return unseal_seed(key, rnd.id, rnd.sealed_seed)

    def find_round(self: Casino, code: str) -> Round:  # type: ignore[misc]  # mixin method typed against the composed Casino
        if not isinstance(code, str) or not code:
            raise RoundNotFound("a game code is required")
        rnd = self.find(Round, round_id_for(code))
        if rnd is None:
            raise RoundNotFound(f"no round with game code {code!r}", game_code=code)
        return rnd

    def open_round(self: Casino, session_id: str) -> Round | None:  # type: ignore[misc]  # mixin method typed against the composed Casino
        session = self._session(session_id)
        if session.open_round is None:
            return None
        return self.find_round(session.open_round)

    def start_round(  # type: ignore[misc]  # mixin method typed against the composed Casino
        self: Casino,
        request_id: str,
        scope: str,
        session_id: str,
        game: str,
        params: dict[str, Any] | Callable[[GameSession], dict[str, Any]],
        command: str,
    ) -> Result:
        """``params`` may be a function of the session (e.g. "repeat" the last bet); then
        the request body is just the session, so a retry is recognised however the
        session's last bet has moved on since."""
        adapter = self.adapters[game]
        # One seed per request: a retried attempt (version conflict, code clash) deals the
        # same cards, so a deterministic seed source stays in step with the rounds.
        seeds: list[bytes] = []
        round_params = params if callable(params) else (lambda _: params)
        body = {} if callable(params) else params

        def action() -> tuple[list[Aggregate], Result]:
            session = self._session(session_id)
            session.check_idle()
            params = round_params(session)
            stake = adapter.stake_of(params)  # validates the bet against the rules
            session.check_debit(stake)
            if not seeds:
                seeds.append(self.seed_source())
            seed = seeds[0]
            state = adapter.start(params, seed)
            now = datetime.now(UTC)
            prefix = getattr(adapter, "prefix", lambda _: adapter.code_prefix)(params)
            code = new_game_code(prefix, now)
            rid = round_id_for(code)
            variant, rules_version, paytable_id = adapter.describe(params)
            rnd = Round(
                code=code,
                game=game,
                variant=variant,
                rules_version=rules_version,
                paytable_id=paytable_id,
                session_id=str(session.id),
                player_id=session.player_id,
                currency=session.currency,
                stake=stake,
                params=params,
                started_at=now.isoformat(timespec="milliseconds"),
                commitment=commitment(seed),
                sealed_seed=seal_seed(self.keyring.sealing_key, rid, seed),
                sealing_kid=self.keyring.sealing_kid,
                view=adapter.view(state),
            )
            session.stake(code, stake)
            session.round_opened(code)
            self._maybe_settle(adapter, session, rnd, state, seed)
            return [session, rnd], round_result(rnd, session.balance)

        return self.command(
            scope, request_id, command, {"session_id": str(session_id), **body}, action
        )

    def act(  # type: ignore[misc]  # mixin method typed against the composed Casino
        self: Casino,
        request_id: str,
        scope: str,
        session_id: str,
        decision: list[Any],
        command: str,
        automatic: bool = False,
    ) -> Result:
        def action() -> tuple[list[Aggregate], Result]:
            session = self._session(session_id)
            session.check_open()
            if session.open_round is None:
                raise InvalidRequest("no round is open in this session", session_id=session_id)
            rnd = self.find_round(session.open_round)
            self._act_on(session, rnd, decision, automatic)
            return [session, rnd], round_result(rnd, session.balance)

        return self.command(
            scope,
            request_id,
            command,
            {"session_id": str(session_id), "decision": decision},
            action,
        )

    def _act_on(  # type: ignore[misc]  # mixin method typed against the composed Casino
        self: Casino, session: GameSession, rnd: Round, decision: list[Any], automatic: bool
    ) -> None:
        rnd.check_open()
        adapter = self.adapters[rnd.game]
        seed = self._seed_of(rnd)
        state = adapter.replay(rnd.params, rnd.decisions, seed)
        new_state = adapter.apply(rnd.params, state, decision, seed)
        added = adapter.staked(new_state) - adapter.staked(state)
        if added:
            session.stake(rnd.code, added)
        rnd.acted(
            decision=list(decision),
            automatic=automatic,
            stake_added=added,
            view=adapter.view(new_state),
        )
        self._maybe_settle(adapter, session, rnd, new_state, seed)

    def _maybe_settle(  # type: ignore[misc]  # mixin method typed against the composed Casino
        self: Casino,
        adapter: GameAdapter,
        session: GameSession,
        rnd: Round,
        state: Any,
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
        session.round_closed(rnd.code, {"game": rnd.game, "params": dict(rnd.params)})

    def complete_with_default(self: Casino, session: GameSession) -> Round | None:  # type: ignore[misc]  # mixin method typed against the composed Casino
        """Finish an open round with the engine's default action(s), recorded as automatic."""
        if session.open_round is None:
            return None
        rnd = self.find_round(session.open_round)
        adapter = self.adapters[rnd.game]
        seed = self._seed_of(rnd)
        for _ in range(100):
            if rnd.status != "open":
                break
            state = adapter.replay(rnd.params, rnd.decisions, seed)
            self._act_on(session, rnd, adapter.default_decision(state), automatic=True)
        return rnd

    def void_round(  # type: ignore[misc]  # mixin method typed against the composed Casino
        self: Casino, request_id: str, code: str, reason: str, incident_id: str
    ) -> Result:
        """Operator command after a malfunction: refund every stake, reverse any credited
        win, reveal the seed. Idempotent: voiding a voided round returns its void."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidRequest("a void needs a reason")
        if not isinstance(incident_id, str) or not incident_id.strip():
            raise InvalidRequest("a void needs an incident id")

        def action() -> tuple[list[Aggregate], Result]:
            rnd = self.find_round(code)
            session = self._session(rnd.session_id)
            if rnd.status == "voided":
                return [], {**round_result(rnd, session.balance), "already_voided": True}
            reversed_win = rnd.win_credited
            touched: list[Aggregate] = [session, rnd]
            if session.closed:
                # The session's balance already went back to the account: adjust there.
                account: Account = self.repository.get(session.account_id)
                if rnd.staked:
                    account.refund_round(rnd.code, rnd.staked)
                if reversed_win:
                    account.reverse_round_win(rnd.code, reversed_win)
                touched.append(account)
            else:
                if rnd.staked:
                    session.refund(rnd.code, rnd.staked)
                if reversed_win:
                    session.reverse_win(rnd.code, reversed_win)
            rnd.voided(
                reason=reason,
                incident_id=incident_id,
                refunded=rnd.staked,
                reversed_win=reversed_win,
                seed=self._seed_of(rnd).hex(),
            )
            if session.open_round == rnd.code:
                session.round_closed(rnd.code, None)
            return touched, {**round_result(rnd, session.balance), "already_voided": False}

        return self.command(
            "operator",
            request_id,
            "void",
            {"code": code, "reason": reason, "incident_id": incident_id},
            action,
        )
