"""The statement projection: every player's statement lines, ledgers and balances.

The fold of :class:`ledger.statement.StatementBook` kept in three tables instead of in
memory, line for line the same (the book stays what ``audit-cli statement`` reads the raw
log with; tests hold the two equal):

- ``ledgers``: each ledger a player owns (``account:<id>``, ``session:<id>``) with its
  balance, the player, and the order it became theirs;
- ``players``: each player's money (account plus sessions) and the accounts' part of it;
- ``lines``: one row per movement of a player's money, with the balances right after it
  (the statement's page is a range of this table's primary key).

Only movements that touch a ledger a player owns change anything (as in the book): the
house's and the wallets' ledgers are never a player's and are not kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ledger.readside.projection import Event, Projector

if TYPE_CHECKING:
    from ledger.ports import LogApp
from ledger.readside.view import INT, TEXT, Key, Query, Table
from ledger.statement_lines import ACCOUNT_OPENED, KINDS, Line

LEDGERS = Table(
    "ledgers",
    (
        ("ledger", TEXT),
        ("player", TEXT),
        ("balance", INT),
        ("owned", INT),
        ("ord", INT),
        ("position", INT),
    ),
    ("ledger",),
    indexes=(("player", "owned", "ord"),),
    fixed=("player", "owned", "ord"),  # a ledger is owned once (``_own``, when absent)
)
PLAYERS = Table(
    "players",
    (("player", TEXT), ("balance", INT), ("account_balance", INT), ("position", INT)),
    ("player",),
)
LINES = Table(
    "lines",
    (
        ("player", TEXT),
        ("seq", INT),
        ("time", TEXT),
        ("kind", TEXT),
        ("ledger", TEXT),
        ("session_id", TEXT),
        ("round_code", TEXT),
        ("amount", INT),
        ("currency", TEXT),
        ("balance", INT),
        ("account_balance", INT),
        ("session_balance", INT),
        ("position", INT),
    ),
    ("player", "seq"),
    append_only=True,
)
LINE_FIELDS = tuple(n for n, _ in LINES.columns if n not in ("player", "position"))


def _time(doc: Mapping[str, Any]) -> str:
    ts = doc.get("timestamp")
    return str(ts.get("_data_") if isinstance(ts, dict) else ts)


class StatementProjector(Projector):
    name = "statement"
    tables = (LEDGERS, PLAYERS, LINES)

    def wants(self, topic: str, state: bytes) -> bool:
        return topic == ACCOUNT_OPENED or b'"movement"' in state

    def takes(self, topic: str, doc: Mapping[str, Any]) -> bool:
        return topic == ACCOUNT_OPENED or "movement" in doc

    def takes_topic(self, topic: str) -> bool | None:
        return True if topic == ACCOUNT_OPENED else None

    def apply(self, rows: Any, event: Event) -> None:
        seq, originator_id, topic, doc = event
        if topic == ACCOUNT_OPENED and isinstance(doc.get("player_id"), str):
            self._own(rows, f"account:{originator_id}", doc["player_id"], seq, 0)
            return
        mv = doc.get("movement")
        if not isinstance(mv, dict):
            return
        src, dst, amount = str(mv.get("source")), str(mv.get("destination")), mv.get("amount")
        if type(amount) is not int:
            return
        # Each row is read once (``ledgers``, ``players``: the rows as this event has
        # left them so far) and written back after each change, as the book moves them.
        get, put = rows.get, rows.put
        ledgers = {src: get(LEDGERS, (src,))}
        if dst not in ledgers:
            ledgers[dst] = get(LEDGERS, (dst,))
        owner = ledgers[src] or ledgers[dst]
        if owner is None:
            return
        player = owner["player"]
        players: dict[str, dict[str, Any] | None] = {}
        for idx, name in enumerate((src, dst)):  # a buy-in makes the new session the player's
            if ledgers[name] is None and name.startswith("session:"):
                ledgers[name] = self._own(rows, name, player, seq, idx, players)
        for name, delta in ((src, -amount), (dst, amount)):
            row = ledgers[name]
            if row is None:
                continue  # nobody's ledger (the house, a wallet): not kept
            row["balance"] += delta
            row["position"] = seq
            put(LEDGERS, row)
            who = row["player"]
            if who not in players:
                players[who] = get(PLAYERS, (who,))
            totals = players[who] or _player(who, seq)
            totals["balance"] += delta
            if name.startswith("account:"):
                totals["account_balance"] += delta
            totals["position"] = seq
            put(PLAYERS, totals)
            players[who] = totals
        ledger, kind = _steps(topic)
        own = f"{ledger}:{originator_id}"
        # the session this movement is of: its own ledger, else the one it names (no
        # generator here: one of the fold's hottest lines)
        if own.startswith("session:"):
            session: str | None = own
        elif src.startswith("session:"):
            session = src
        elif dst.startswith("session:"):
            session = dst
        else:
            session = None
        # Session events name the round by game_code since class_version 2 (round_id before).
        code = doc.get("round_code") or doc.get("game_code") or doc.get("round_id")
        if player not in players:
            players[player] = get(PLAYERS, (player,))
        totals = players[player] or _player(player, seq)
        if session is None:
            held = None
        else:
            held = ledgers[session] if session in ledgers else get(LEDGERS, (session,))
        rows.insert(
            LINES,
            {
                "player": player,
                "seq": seq,
                "time": _time(doc),
                "kind": kind,
                "ledger": ledger,
                "session_id": session.split(":", 1)[1] if session else None,
                "round_code": str(code) if code else None,
                "amount": amount if dst == own else -amount,
                "currency": str(mv.get("currency")),
                "balance": totals["balance"],
                "account_balance": totals["account_balance"],
                "session_balance": (held["balance"] if held else 0) if session else None,
                "position": seq,
            },
        )

    def needs(self, rows: Any, event: Event) -> Iterable[tuple[Table, Key]]:
        """Each ledger a movement names and, once held, its player's totals."""
        doc = event.doc
        if event.topic == ACCOUNT_OPENED:
            player = doc.get("player_id")
            return ((PLAYERS, (player,)),) if isinstance(player, str) else ()
        mv = doc.get("movement")
        if not isinstance(mv, dict):
            return ()
        out = []
        for name in (str(mv.get("source")), str(mv.get("destination"))):
            out.append((LEDGERS, (name,)))
            held = rows.peek(LEDGERS, (name,))
            if held is not None:
                out.append((PLAYERS, (held["player"],)))
        return out

    def _own(
        self,
        rows: Any,
        ledger: str,
        player: str,
        seq: int,
        idx: int,
        players: dict[str, dict[str, Any] | None] | None = None,
    ) -> dict[str, Any]:
        row = {
            "ledger": ledger,
            "player": player,
            "balance": 0,
            "owned": seq,
            "ord": idx,
            "position": seq,
        }
        rows.put(LEDGERS, row)
        players = {} if players is None else players
        if player not in players:
            players[player] = rows.get(PLAYERS, (player,))
        if players[player] is None:
            players[player] = _player(player, seq)
            rows.put(PLAYERS, players[player])
        return row


_STEPS: dict[str, tuple[str, str]] = {}


def _steps(topic: str) -> tuple[str, str]:
    """The ledger a movement's event names (``account`` or ``session``) and the line's
    kind, by topic."""
    found = _STEPS.get(topic)
    if found is None:
        ledger = "account" if topic.startswith("croupier/account/") else "session"
        step = topic.rsplit("/", 1)[-1].split("@")[0]
        found = _STEPS[topic] = (ledger, KINDS.get(step, step))
    return found


def _player(player: str, seq: int) -> dict[str, Any]:
    return {"player": player, "balance": 0, "account_balance": 0, "position": seq}


def line_of(row: dict[str, Any]) -> Line:
    return Line(**{k: row[k] for k in LINE_FIELDS})


class Statements:
    """The statements of one application, read from its statement view
    (:mod:`ledger.readside.statement`): a page costs what it returns.

    ``at_least``: the log position the answer must reflect (a command's ``position``);
    None: the log's head when asked. :attr:`position` is the position the last answer
    reflects."""

    def __init__(self, app: LogApp, at_least: int | None = None) -> None:
        self.app = app
        self.at_least = at_least
        self.position = 0

    def _read(self, *queries: Query) -> list[list[dict[str, Any]]]:
        rows: list[list[dict[str, Any]]]
        self.position, rows = self.app.readside.read("statement", self.at_least, queries)
        return rows

    def lines(self, player: str, after: int = 0, limit: int | None = None) -> list[Line]:
        """The player's lines after cursor ``after`` (a ``seq``), oldest first."""
        (rows,) = self._read(_lines(player, after, limit))
        return [line_of(r) for r in rows]

    def balances(self, player: str) -> dict[str, int]:
        """Every ledger of the player (account and sessions) with its balance now."""
        return self.ledgers(player)[1]

    def totals(self, player: str) -> dict[str, int] | None:
        """The player's money (``balance``: account plus sessions) and the accounts' part
        (``account_balance``), or None for a player the view does not know."""
        (found,) = self._read(Query(PLAYERS, "player = ?", (player,)))
        return _totals(found)

    def page(
        self, player: str, after: int = 0, limit: int | None = None
    ) -> tuple[dict[str, int] | None, list[Line]]:
        """:meth:`totals` and :meth:`lines` read together."""
        found, rows = self._read(
            Query(PLAYERS, "player = ?", (player,)), _lines(player, after, limit)
        )
        return _totals(found), [line_of(r) for r in rows]

    def ledgers(self, player: str) -> tuple[dict[str, int] | None, dict[str, int]]:
        """:meth:`totals` and :meth:`balances` read together."""
        found, rows = self._read(
            Query(PLAYERS, "player = ?", (player,)),
            Query(LEDGERS, "player = ?", (player,), "owned, ord"),
        )
        return _totals(found), {r["ledger"]: r["balance"] for r in rows}


def _lines(player: str, after: int, limit: int | None) -> Query:
    return Query(LINES, "player = ? AND seq > ?", (player, after), "seq", limit)


def _totals(found: list[dict[str, Any]]) -> dict[str, int] | None:
    if not found:
        return None
    return {"balance": found[0]["balance"], "account_balance": found[0]["account_balance"]}


def statements(app: LogApp, at_least: int | None = None) -> Statements:
    """The application's statements, from its statement view brought to ``at_least``
    (the log's head when None)."""
    return Statements(app, at_least)
