"""Re-execution in ``audit-cli verify``: every round's money against what the rules pay.

Signatures, chains and checkpoints show who wrote a row; they hold nothing once the
signing key has leaked (an insider re-signs a changed row, re-links the chain and
re-signs the checkpoints). What does hold is the game: a Red Dog or video-poker round is
re-run by its pure engine from its revealed seed on its recorded decisions, a live
blackjack seat from the cards its round shows (:mod:`audit_cli.reexec_table`), and every
stake debited, win credited, refund and reversal on the session (or on its account, once
the session has closed) is compared with what the engine gives, movement by movement.

Work is split as ``verify`` splits it: each worker picks the game rows out of its chunk
(:func:`chunk_games`) and re-runs the rounds that start and end inside it, handing back
one small :class:`RoundExpect` per round, the chunk's game movements and the rows of the
rounds it could not finish; the parent (:class:`Reexec`) joins those in log order, re-runs
the rounds that straddle chunks, and compares each round as soon as its money is closed
(settled or voided, every movement seen and equal), then drops it: the parent holds only
the open rounds and their movements, not one record per round of the log. Whatever comes
later for a dropped round (a void, a refund, a forged movement naming its code) re-opens
it from the store (:class:`Reexec`).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from audit_cli.findings import Finding
from audit_cli.rows import Row
from ledger import contracts, envelope

if TYPE_CHECKING:
    from audit_cli.reexec_table import SeatExpect

STAKE, WIN, REFUND, REVERSAL = "stake", "win", "refund", "reversal"
MONEY_TOPICS = {
    contracts.SESSION_STAKE_DEBITED: STAKE,
    contracts.SESSION_WIN_CREDITED: WIN,
    contracts.SESSION_ROUND_SETTLED: WIN,
    contracts.SESSION_REFUNDED: REFUND,
    contracts.SESSION_WIN_REVERSED: REVERSAL,
    contracts.ACCOUNT_ROUND_REFUNDED: REFUND,
    contracts.ACCOUNT_ROUND_WIN_REVERSED: REVERSAL,
}
"""Topics of the events that move a round's money, and what each moves."""
ON_ACCOUNT = frozenset((contracts.ACCOUNT_ROUND_REFUNDED, contracts.ACCOUNT_ROUND_WIN_REVERSED))
ROUND_TOPICS = frozenset(
    (
        contracts.ROUND_STARTED,
        contracts.ROUND_ACTED,
        contracts.ROUND_SETTLED,
        contracts.ROUND_VOIDED,
    )
)
TABLE_PREFIXES = (
    "croupier/blackjack/round/",
    "croupier/blackjack/seat/",
    "croupier/blackjack/shoe/",
)
FINAL = ("settled", "voided")


@dataclass(frozen=True)
class MoneyFinding(Finding):
    """A round's money that is not what the rules give: which round (``game_code``), which
    movement (``kind``, the row in ``notification_id``), what the log moved (``recorded``)
    and what re-execution gives (``expected``)."""

    game_code: str | None = None
    kind: str | None = None
    recorded: int | None = None
    expected: int | None = None
    session_id: str | None = None


class Move(NamedTuple):
    """One movement of a round's money, as the log records it."""

    code: str
    kind: str
    amount: int
    owner: str
    """The aggregate it is recorded on: the session (or, ``on_account``, its account)."""
    on_account: bool
    row: int
    version: int


class RoundExpect(NamedTuple):
    """What the rules give one Red Dog or video-poker round (from its engine)."""

    code: str
    oid: str
    game: str
    session: str
    status: str
    """``settled``, ``voided`` or ``open`` (seed not revealed yet: pending)."""
    stakes: tuple[int, ...]
    win: int
    refund: int
    reversal: int
    row: int
    """The row of the round's last event."""
    problem: str | None = None
    """Why it could not be re-run (seed, parameters or decisions the engine refuses)."""


Fact = tuple[int, str, int, str, dict[str, Any]]
"""A game row the parent needs: (row id, aggregate id, version, topic, payload)."""


class ChunkGames(NamedTuple):
    """A worker's game rows of one chunk, reduced (:func:`chunk_games`)."""

    rounds: list[RoundExpect]
    facts: list[Fact]
    moves: list[Move]
    sessions: list[tuple[str, str]]
    """(session id, account id) of every session opened in the chunk."""
    stray: list[tuple[int, str, int, str]]
    """House money moved by an event that is no round's: (row, aggregate, version, topic)."""


def _uuid(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("_data_")
    text = str(value)
    if len(text) == 32:
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return text


def _doc(row: Row) -> dict[str, Any] | None:
    try:
        return _loads(envelope.decode(row.state).payload)
    except (envelope.EnvelopeError, TypeError, ValueError):
        return None


def _loads(payload: bytes) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def is_game_topic(topic: Any) -> bool:
    return type(topic) is str and (
        topic in MONEY_TOPICS
        or topic in ROUND_TOPICS
        or topic == contracts.SESSION_OPENED
        or topic.startswith(TABLE_PREFIXES)
    )


def chunk_games(
    rows: list[Row], results: list[Any], payloads: dict[int, bytes] | None = None
) -> ChunkGames:
    """Worker side: the chunk's game rows, its complete rounds re-run (see module doc).
    ``payloads``: the game rows' payloads by index, as the row checks read them."""
    out = ChunkGames([], [], [], [], [])
    rounds: dict[str, list[Fact]] = {}
    payloads = payloads or {}
    for i, (row, result) in enumerate(zip(rows, results, strict=True)):
        topic = row.topic
        extract = result[4]
        if not is_game_topic(topic):
            if extract is not None and _house(extract.get("movement")):
                out.stray.append((row.notification_id, row.originator_id, row.version, topic))
            continue
        raw = payloads.get(i)
        doc = _doc(row) if raw is None else _loads(raw)
        if doc is None:
            continue  # the row checks report it
        if topic in MONEY_TOPICS:
            move = move_of(row, doc)
            if move is not None:
                out.moves.append(move)
        elif topic == contracts.SESSION_OPENED:
            out.sessions.append((row.originator_id, _uuid(doc.get("account_id"))))
        elif topic in ROUND_TOPICS:
            fact = (row.notification_id, row.originator_id, row.version, topic, doc)
            rounds.setdefault(row.originator_id, []).append(fact)
        else:
            out.facts.append((row.notification_id, row.originator_id, row.version, topic, doc))
    for facts in rounds.values():
        if complete(facts):
            out.rounds.append(expect_round(facts))
        else:
            out.facts.extend(facts)
    return out


def _house(mv: Any) -> bool:
    if not isinstance(mv, dict):
        return False
    src, dst = mv.get("source"), mv.get("destination")
    return (isinstance(src, str) and src.startswith("house:")) or (
        isinstance(dst, str) and dst.startswith("house:")
    )


def move_of(row: Row, doc: dict[str, Any]) -> Move | None:
    mv = doc.get("movement")
    amount = mv.get("amount") if isinstance(mv, dict) else None
    code = doc.get("round_code") if row.topic in ON_ACCOUNT else doc.get("game_code")
    if code is None:
        code = doc.get("round_id")  # session events before class version 2
    if type(amount) is not int or not isinstance(code, str):
        return None  # the books report a malformed movement
    return Move(
        code,
        MONEY_TOPICS[row.topic],
        amount,
        row.originator_id,
        row.topic in ON_ACCOUNT,
        row.notification_id,
        row.version,
    )


def _step(topic: str) -> str:
    return topic.rsplit("/", 1)[-1].split("@", 1)[0]


def complete(facts: list[Fact]) -> bool:
    """Whether these are a whole round: versions 1, 2, ... from its start to its end."""
    return (
        facts[0][3] == contracts.ROUND_STARTED
        and all(f[2] == i for i, f in enumerate(facts, start=1))
        and _step(facts[-1][3]) in FINAL
    )


def expect_round(facts: list[Fact]) -> RoundExpect:
    """Re-run one round (its events from the start, in order) and say what the rules give:
    its stakes, its win, and for a void the refund of every stake and the reversal of a
    win credited before."""
    _, oid, _, _, start = facts[0]
    code, game = str(start.get("code")), str(start.get("game"))
    session = str(start.get("session_id"))
    steps = [(_step(f[3]), f[4]) for f in facts]
    last_row = facts[-1][0]
    recorded = [_int(start.get("stake"))] + [
        _int(d.get("stake_added")) for s, d in steps if s == "acted" and d.get("stake_added")
    ]
    final = steps[-1][0]
    if final not in FINAL:
        # Seed sealed: nothing to re-run yet. What it may have moved: its stakes only.
        return RoundExpect(code, oid, game, session, "open", tuple(recorded), 0, 0, 0, last_row)
    try:
        stakes, payout = _replay(start, steps)
    except _Refused as e:
        return RoundExpect(
            code, oid, game, session, final, tuple(recorded), 0, 0, 0, last_row, str(e)
        )
    won = payout if any(s == "settled" for s, _ in steps) else 0
    if final == "settled":
        return RoundExpect(code, oid, game, session, final, stakes, won, 0, 0, last_row)
    return RoundExpect(code, oid, game, session, final, stakes, won, sum(stakes), won, last_row)


def voided_later(expect: RoundExpect, row: int) -> RoundExpect:
    """A settled round voided afterwards: every stake back, the win taken back."""
    return expect._replace(status="voided", refund=sum(expect.stakes), reversal=expect.win, row=row)


class _Refused(Exception):
    pass


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def _replay(start: dict[str, Any], steps: list[tuple[str, dict[str, Any]]]) -> tuple[Any, int]:
    """(the stakes the engine debits, in order; its payout) over the recorded decisions."""
    from games import deal as deals
    from games.video_poker import engine as vp

    # Each round is re-run once: no shuffle memo. Its draws name their holds: no proposal.
    remember, deals.REMEMBER = deals.REMEMBER, False
    propose, vp.PROPOSE = vp.PROPOSE, False
    try:
        return _run(start, steps)
    finally:
        deals.REMEMBER = remember
        vp.PROPOSE = propose


def preload() -> None:
    """Import the game engines (and read their rules) once, in the parent, before the
    workers fork: otherwise each worker pays for it on its first round."""
    from games import registry

    registry.adapters()


def _run(start: dict[str, Any], steps: list[tuple[str, dict[str, Any]]]) -> tuple[Any, int]:
    from games import registry
    from games.deal import ChosenCards, Deal

    final = next(d for s, d in reversed(steps) if s in FINAL)
    try:
        seed = bytes.fromhex(str(final.get("seed")))
    except ValueError:
        seed = b""
    if not seed:
        raise _Refused("the round's last event does not reveal its seed")
    if hashlib.sha256(seed).hexdigest() != start.get("commitment"):
        raise _Refused("the revealed seed does not match the commitment of the round's start")
    adapter = registry.adapters().get(str(start.get("game")))
    if adapter is None:
        raise _Refused(f"unknown game {start.get('game')!r}")
    try:
        deal: Deal = seed
        if start.get("chosen_cards") is not None:
            deal = ChosenCards.from_wire(seed, start["chosen_cards"])
        params = adapter.read_params(start.get("params") or {})
        stakes = [adapter.stake_of(params)]
        state = adapter.replay(params, [], deal)
        for step, doc in steps[1:]:
            if step != "acted":
                continue
            before = adapter.staked(state)
            state = adapter.apply(
                params, state, adapter.read_decision(list(doc.get("decision") or [])), deal
            )
            if adapter.staked(state) != before:
                stakes.append(adapter.staked(state) - before)
        payout = adapter.payout(state) if adapter.settled(state) else 0
    except Exception as e:  # an engine refusal of the recorded round is a finding
        raise _Refused(f"the engine refuses the recorded round: {e!r}") from None
    return tuple(stakes), payout


# -- the parent: rounds joined in log order, compared at the end -------------------------


Lookup = Callable[[str], list[Row]]
"""Every row of one aggregate, by its id, from the store (``rows.read_aggregate``)."""


class Reexec:
    """The in-order half: rounds re-run in the workers or here, movements gathered.

    Memory stays bounded: a round whose money is closed (settled or voided, every movement
    the rules give seen and equal) is compared and dropped at once; only open rounds and
    their movements are kept. What arrives later for a dropped round (a void long after,
    its refund, or a forged movement naming its code) re-opens it from the store
    (``lookup``: the round's own rows, its movements on its session and account up to
    where the log has been read), so it is compared exactly as if it had been kept. A
    live-blackjack table round likewise: dropped once re-played and every seat's money
    matched; a later movement naming its code re-plays it from the store (its rows, its
    dealt seats' and the seats of the sessions that movement names)."""

    def __init__(self, lookup: Lookup | None = None) -> None:
        self.expects: dict[str, RoundExpect] = {}
        self.code_of: dict[str, str] = {}
        self.open: dict[str, list[Fact]] = {}
        self.moves: dict[str, list[Move]] = defaultdict(list)
        self.accounts: dict[str, str] = {}
        self.stray: list[tuple[int, str, int, str]] = []
        self.lookup = lookup
        self.closed = 0
        """Rounds compared and dropped (re-executed, their money equal to the rules')."""
        self.closed_moves = 0
        self.upto = 0
        """The last row of the chunks fed so far (a re-opened round's movements: up to it)."""
        from audit_cli.reexec_table import Tables

        self.tables = Tables()

    def feed(self, games: ChunkGames) -> None:
        touched: set[str] = set()
        for e in games.rounds:
            self._expect(e)
            touched.add(e.code)
        for fact in games.facts:
            if fact[3] in ROUND_TOPICS:
                code = self._round_fact(fact)
                if code is not None:
                    touched.add(code)
            else:
                self.tables.fact(fact)
        self.tables.chunk_done()
        moves = self.moves
        for m in games.moves:
            moves[m.code].append(m)
            touched.add(m.code)
        self.accounts.update(games.sessions)
        self.stray.extend(games.stray)
        if self.lookup is not None:
            for code in touched:
                self._close(code)
            for code in touched | set(self.tables.fresh):
                self._close_table(code)
        self.tables.fresh.clear()
        self.upto = max(
            self.upto,
            max((e.row for e in games.rounds), default=0),
            max((f[0] for f in games.facts), default=0),
            max((m.row for m in games.moves), default=0),
            max((s[0] for s in games.stray), default=0),
        )

    def _close(self, code: str) -> None:
        """Compare and drop the round if its money is closed and equal to the rules'."""
        e = self.expects.get(code)
        if e is None or e.status == "open" or e.problem is not None:
            return
        moves = self.moves.get(code, [])
        if compare_round(e, moves, self.accounts):
            return  # kept: it may still be completed, else it is reported at the end
        del self.expects[code]
        self.code_of.pop(e.oid, None)
        self.moves.pop(code, None)
        self.closed += 1
        self.closed_moves += len(moves)

    def _close_table(self, code: str) -> None:
        """Compare and drop a re-played table round if every seat's money is equal to
        what the engine gives it (a round with a finding of its own is kept)."""
        seats = self.tables.expects.get(code)
        if seats is None or code in self.tables.flagged:
            return
        moves = self.moves.get(code, [])
        if self.tables.compare(code, seats, moves, self.accounts):
            return
        del self.tables.expects[code]
        self.moves.pop(code, None)
        self.closed_moves += len(moves)

    def _reopen_table(self, code: str) -> list[SeatExpect] | None:
        """A dropped table round back from the store: its rows, its dealt seats' and the
        seats of the sessions its later movements name, re-played as when it was dropped,
        with its movements on those seats' sessions and accounts up to ``upto``; None if
        the store has no ended table round ``code``."""
        from audit_cli.reexec_table import Tables
        from ledger.tables.aggregates import round_code_id_for, seat_id_for

        assert self.lookup is not None
        rid = None
        for row in self.lookup(str(round_code_id_for(code))):
            doc = _doc(row) if row.notification_id <= self.upto else None
            if doc is not None and row.topic == contracts.TABLE_ROUND_CODE_RECORDED:
                rid = str(doc.get("round_id"))
        if rid is None:
            return None
        try:
            facts = self._facts_of(rid)
        except ValueError:
            return None
        seat_ids = {
            str(s)
            for f in facts
            if f[3] == contracts.TABLE_ROUND_DEALT
            for s in f[4].get("seats") or []
        }
        later = self.moves.get(code, [])
        sessions = {m.owner for m in later if not m.on_account}
        accounts = {m.owner for m in later if m.on_account}
        sessions |= {s for s, a in self.accounts.items() if a in accounts}
        for session in sessions:
            try:
                seat_ids.add(str(seat_id_for(rid, session)))
            except ValueError:
                continue  # not a UUID: no seat of the log
        for sid in seat_ids:
            facts.extend(self._facts_of(sid))
        tables = Tables()
        for fact in sorted(facts):
            tables.fact(fact)
        expects, _ = tables.finish()
        seats = expects.get(code)
        if seats is None:
            return None
        old: list[Move] = []
        for seat in seats:
            owners = [seat.session]
            account = self.accounts.get(seat.session)
            if account is not None:
                owners.append(account)
            old.extend(self._moves_of(code, owners))
        rows = {m.row for m in later}
        merged = {m.row: m for m in old if m.row not in rows}
        self.closed_moves -= len(merged)
        self.moves[code] = sorted([*merged.values(), *later], key=lambda m: m.row)
        return seats

    def _facts_of(self, oid: str) -> list[Fact]:
        """The aggregate's rows read so far (up to ``upto``), as facts."""
        assert self.lookup is not None
        facts: list[Fact] = []
        for row in self.lookup(oid):
            doc = _doc(row) if row.notification_id <= self.upto else None
            if doc is not None:
                facts.append((row.notification_id, row.originator_id, row.version, row.topic, doc))
        return facts

    def _moves_of(self, code: str, owners: list[str]) -> list[Move]:
        """Movements of round ``code`` on these sessions and accounts, up to ``upto``."""
        assert self.lookup is not None
        found: list[Move] = []
        for owner in owners:
            try:
                rows = self.lookup(owner)
            except ValueError:
                continue  # not a UUID: the round names no session of the log
            for row in rows:
                if row.notification_id > self.upto or row.topic not in MONEY_TOPICS:
                    continue
                doc = _doc(row)
                move = move_of(row, doc) if doc is not None else None
                if move is not None and move.code == code:
                    found.append(move)
        return found

    def _expect(self, e: RoundExpect) -> None:
        self.expects[e.code] = e
        self.code_of[e.oid] = e.code

    def _round_fact(self, fact: Fact) -> str | None:
        oid = fact[1]
        facts = self.open.get(oid)
        if facts is None:
            code = self.code_of.get(oid)
            if code is None and fact[3] != contracts.ROUND_STARTED:
                code = self._reopen(oid)
            if code is not None and fact[3] == contracts.ROUND_VOIDED:
                self._expect(voided_later(self.expects[code], fact[0]))
                return code
            if code is not None:
                return code  # another event after its end: the chain checks see the order
            facts = self.open[oid] = []
        facts.append(fact)
        if complete(facts):
            del self.open[oid]
            e = expect_round(facts)
            self._expect(e)
            return e.code
        return None

    def _reopen(self, oid: str) -> str | None:
        """A dropped round back from the store (with its movements up to ``upto``), as it
        was when dropped; None if the store has no ended round ``oid`` before ``upto``."""
        if self.lookup is None:
            return None
        facts: list[Fact] = []
        for row in self.lookup(oid):
            if row.notification_id > self.upto or row.topic not in ROUND_TOPICS:
                continue
            doc = _doc(row)
            if doc is None:
                return None
            facts.append((row.notification_id, row.originator_id, row.version, row.topic, doc))
            if complete(facts):
                break
        if not facts or not complete(facts):
            return None
        e = expect_round(facts)
        if e.code in self.expects:
            return None
        for later in self._later_voids(oid, facts[-1][0]):
            e = voided_later(e, later)
        old = self._store_moves(e)
        pending = self.moves.get(e.code, [])
        rows = {m.row for m in pending}
        merged = [m for m in old if m.row not in rows]
        self.closed -= 1
        self.closed_moves -= len(merged)
        self.moves[e.code] = sorted(merged + pending, key=lambda m: m.row)
        self._expect(e)
        return e.code

    def _later_voids(self, oid: str, end: int) -> list[int]:
        """Rows of voids after the round's end read before ``upto`` (it was re-opened and
        dropped again since)."""
        assert self.lookup is not None
        return [
            r.notification_id
            for r in self.lookup(oid)
            if end < r.notification_id <= self.upto and r.topic == contracts.ROUND_VOIDED
        ]

    def _store_moves(self, e: RoundExpect) -> list[Move]:
        owners = [e.session]
        account = self.accounts.get(e.session)
        if account is not None:
            owners.append(account)
        return self._moves_of(e.code, owners)

    def finish(self) -> tuple[list[Finding], dict[str, int]]:
        """Every finding, and the counts: rounds re-run, pending, movements compared."""
        findings: list[Finding] = []
        for oid, facts in self.open.items():
            if facts[0][3] == contracts.ROUND_STARTED:
                self._expect(expect_round(facts))  # open: pending
            else:
                findings.append(
                    MoneyFinding(
                        "reexec-round",
                        f"round {oid}: events from v{facts[0][2]} but no start",
                        facts[0][0],
                        oid,
                        facts[0][2],
                    )
                )
        table_expects, table_findings = self.tables.finish()
        findings.extend(table_findings)
        if self.lookup is not None:
            # A movement naming a dropped table round's code: back it comes, then the rest.
            for code in [c for c in self.moves if c not in self.expects]:
                if code not in table_expects:
                    seats = self._reopen_table(code)
                    if seats is not None:
                        table_expects[code] = seats
            # A movement naming a dropped round's code after it was dropped: back it comes.
            from ledger.rounds import round_id_for

            for code in [c for c in self.moves if c not in self.expects]:
                if code not in table_expects:
                    self._reopen(str(round_id_for(code)))
        stats = {
            "rounds_reexecuted": self.closed,
            "rounds_pending": 0,
            "movements_compared": self.closed_moves,
        }
        for code, e in self.expects.items():
            if e.status == "open":
                stats["rounds_pending"] += 1
            elif e.problem is None:
                stats["rounds_reexecuted"] += 1
            findings.extend(compare_round(e, self.moves.get(code, []), self.accounts))
        for code, seats in table_expects.items():
            findings.extend(
                self.tables.compare(code, seats, self.moves.get(code, []), self.accounts)
            )
        for key, value in self.tables.stats.items():
            stats[key] = stats.get(key, 0) + value
        for code, moves in self.moves.items():
            stats["movements_compared"] += len(moves)
            if code not in self.expects and code not in table_expects:
                for m in moves:
                    findings.append(no_round(m))
        for n, oid, version, topic in self.stray:
            findings.append(
                MoneyFinding(
                    "reexec-no-round",
                    f"row {n} ({topic}) moves the house's money but is no round's stake, "
                    "win, refund or reversal",
                    n,
                    oid,
                    version,
                )
            )
        return findings, stats


def no_round(m: Move) -> MoneyFinding:
    return MoneyFinding(
        "reexec-no-round",
        f"{m.code}: {m.kind} of {m.amount} (row {m.row}) names a game code no round in the log has",
        m.row,
        m.owner,
        m.version,
        game_code=m.code,
        kind=m.kind,
        recorded=m.amount,
        expected=0,
    )


def compare_round(e: RoundExpect, moves: Iterable[Move], accounts: dict[str, str]) -> list[Finding]:
    """One round's movements against what re-execution gives (see module doc)."""
    found: list[Finding] = []
    if e.problem is not None:
        found.append(
            MoneyFinding(
                "reexec-round",
                f"{e.code}: cannot be re-executed: {e.problem}",
                e.row,
                e.oid,
                game_code=e.code,
                session_id=e.session,
            )
        )
    by_kind: dict[str, list[Move]] = {STAKE: [], WIN: [], REFUND: [], REVERSAL: []}
    for m in moves:
        by_kind[m.kind].append(m)
        owner = accounts.get(e.session) if m.on_account else e.session
        if m.owner != owner:
            where = "account" if m.on_account else "session"
            found.append(
                MoneyFinding(
                    "reexec-session",
                    f"{e.code}: {m.kind} of {m.amount} (row {m.row}) is on {where} {m.owner}, "
                    f"but the round was played on session {e.session}",
                    m.row,
                    m.owner,
                    m.version,
                    game_code=e.code,
                    kind=m.kind,
                    recorded=m.amount,
                    expected=m.amount,
                    session_id=e.session,
                )
            )
    if e.problem is not None:
        return found  # what the rules give is unknown: the amounts are not compared
    stakes = by_kind[STAKE]
    for i in range(max(len(stakes), len(e.stakes))):
        got = stakes[i] if i < len(stakes) else None
        want = e.stakes[i] if i < len(e.stakes) else 0
        if got is not None and got.amount == want:
            continue
        found.append(_differs(e, STAKE, got, got.amount if got else 0, want))
    for kind, want in ((WIN, e.win), (REFUND, e.refund), (REVERSAL, e.reversal)):
        got_moves = by_kind[kind]
        total = sum(m.amount for m in got_moves)
        if total != want:
            found.append(_differs(e, kind, got_moves[0] if got_moves else None, total, want))
    return found


_VERB = {STAKE: "stake debited", WIN: "win credited", REFUND: "refund", REVERSAL: "win reversed"}


def _differs(e: RoundExpect, kind: str, move: Move | None, got: int, want: int) -> MoneyFinding:
    why = {
        "open": "the round has not ended (its seed is not revealed)",
        "settled": "the round settled (not voided)",
        "voided": "the round was voided",
    }[e.status]
    if move is None:
        check = "reexec-no-movement"
        text = f"{e.code}: no {_VERB[kind]} movement, but the rules give {want} ({why})"
        row, owner, version = e.row, e.oid, None
    else:
        check = "reexec-amount"
        text = f"{e.code}: {_VERB[kind]} {got} (row {move.row}) but the rules give {want} ({why})"
        row, owner, version = move.row, move.owner, move.version
    return MoneyFinding(
        check,
        text,
        row,
        owner,
        version,
        game_code=e.code,
        kind=kind,
        recorded=got,
        expected=want,
        session_id=e.session,
    )
