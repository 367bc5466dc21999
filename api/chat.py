"""The table chat over HTTP (seed 002; the rules are :mod:`ledger.chat`).

A player's game client sends with its session token
(``POST /v1/sessions/{id}/tables/{table}/chat``); messages reach the table's clients on
its stream (``chat``, ``chat-hidden``), except those whose player hides the chat. The
operator moderates (mute, ban, hide; each recorded with its reason and time) and reads
the table's chat with the player ids the stream never shows (for a complaint or a
regulator). Spectators read the chat on their stream and cannot send.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Path, Query
from pydantic import Field

from api import auth
from api.common import ERRORS, IdempotencyKey, casino
from api.schemas import Request, Response
from api.table_schemas import TABLE_PATTERN
from ledger import contracts, results
from ledger.casino import Casino
from ledger.chat import BanChat, HideChat, MuteChat, PostChat, message_id
from ledger.tables import views as queries

router = APIRouter(prefix="/v1", tags=["chat"], responses=ERRORS)
operator_router = APIRouter(
    prefix="/v1", tags=["operator"], dependencies=[Depends(auth.operator)], responses=ERRORS
)

App = Annotated[Casino, Depends(casino)]
Player = Annotated[auth.Caller, Depends(auth.session_player)]
TablePath = Annotated[str, Path(pattern=TABLE_PATTERN, max_length=40)]
PlayerPath = Annotated[str, Path(min_length=1, max_length=100)]
Reason = Annotated[str, Field(min_length=1, max_length=500)]
MAX_BODY_CHARS = 2_000
"""A bound on the text the body may carry at all (the chat's limit is a setting, and a
longer message is refused by the ledger as 422 ``chat-message-invalid``)."""


class ChatBody(Request):
    text: str = Field(max_length=MAX_BODY_CHARS, description="plain text, one line")


class ChatPosted(Response):
    table: str
    id: str = Field(description="the message's id on the stream (a hide names it)")
    number: int = Field(description="the player's message number at this table")
    author: str = Field(description="the pseudonym the table shows (never the player id)")
    text: str
    at: str


class MuteBody(Request):
    minutes: int = Field(strict=True, ge=0, le=525_600, description="0 lifts a mute")
    reason: Reason


class BanBody(Request):
    reason: Reason
    banned: bool = True


class HideBody(Request):
    reason: Reason


class Moderated(Response):
    table: str
    player_id: str
    action: str
    at: str
    muted_until: str | None
    banned: bool
    hidden: list[int]
    id: str | None = None


class ChatEntry(Response):
    position: int = Field(description="the event's log position")
    kind: str = Field(description="posted, hidden, muted or banned")
    player_id: str
    session_id: str | None = None
    id: str | None = None
    author: str | None = None
    text: str | None = None
    number: int | None = None
    until: str | None = None
    banned: bool | None = None
    by: str | None = None
    reason: str | None = None
    at: str


class ChatLog(Response):
    table: str
    entries: list[ChatEntry]
    next_after: int = Field(description="pass as ``after`` for the next page")


@router.post("/sessions/{session_id}/tables/{table}/chat", response_model=ChatPosted)
def post_chat(
    table: TablePath, body: ChatBody, key: IdempotencyKey, caller: Player, app: App
) -> ChatPosted:
    """A message to the table's chat: plain text (never rendered as HTML by a client),
    at most ``chat_max_chars`` characters (else 422 ``chat-message-invalid``), at most
    ``chat_messages`` per ``chat_window_seconds`` (else 429 ``chat-rate-limited`` with
    ``Retry-After``); a muted or banned player gets 403 ``chat-muted`` / ``chat-banned``."""
    assert caller.session_id is not None
    posted = app.command(key, PostChat(caller.session_id, table, body.text))
    return ChatPosted(
        table=posted.table,
        id=posted.id,
        number=posted.number,
        author=posted.author,
        text=posted.text,
        at=posted.at,
    )


MEMBER = "/tables/{table}/chat/players/{player_id}"


@operator_router.post(f"{MEMBER}/mute", response_model=Moderated)
def mute(
    table: TablePath, player_id: PlayerPath, body: MuteBody, key: IdempotencyKey, app: App
) -> Moderated:
    """Mute the player in the table's chat for ``minutes`` (0: lift the mute)."""
    return _moderated(app.command(key, MuteChat(table, player_id, body.minutes, body.reason)))


@operator_router.post(f"{MEMBER}/ban", response_model=Moderated)
def ban(
    table: TablePath, player_id: PlayerPath, body: BanBody, key: IdempotencyKey, app: App
) -> Moderated:
    """Ban the player from the table's chat (``banned: false`` lifts the ban)."""
    return _moderated(app.command(key, BanChat(table, player_id, body.reason, body.banned)))


@operator_router.post(f"{MEMBER}/messages/{{number}}/hide", response_model=Moderated)
def hide(
    table: TablePath,
    player_id: PlayerPath,
    number: Annotated[int, Path(ge=1)],
    body: HideBody,
    key: IdempotencyKey,
    app: App,
) -> Moderated:
    """Hide one message from the table (clients remove it on ``chat-hidden``); the
    message and the hide both stay in the log."""
    return _moderated(app.command(key, HideChat(table, player_id, number, body.reason)))


def _moderated(done: results.ChatModerated) -> Moderated:
    return Moderated(
        table=done.table,
        player_id=done.player_id,
        action=done.action,
        at=done.at,
        muted_until=done.muted_until,
        banned=done.banned,
        hidden=done.hidden,
        id=done.id,
    )


CHAT_TOPICS = [
    contracts.CHAT_POSTED,
    contracts.CHAT_HIDDEN,
    contracts.CHAT_MUTED,
    contracts.CHAT_BANNED,
    contracts.CHAT_MEMBER_OPENED,
]


@operator_router.get("/tables/{table}/chat", response_model=ChatLog)
def chat_log(
    table: TablePath,
    app: App,
    after: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> ChatLog:
    """The table's chat as the log records it, oldest first: every message with its
    author's player id and session, every moderation action with its reason."""
    queries.table(app, table)  # 404 for an unknown table
    entries: list[dict[str, Any]] = []
    players: dict[UUID, str] = {}
    position = after
    while len(entries) < limit:
        page = app.recorder.select_notifications(start=position + 1, limit=500, topics=CHAT_TOPICS)
        for n in page:
            position = n.id
            event: Any = app.mapper.to_domain_event(n)
            oid = n.originator_id
            assert isinstance(oid, UUID)
            if n.topic == contracts.CHAT_MEMBER_OPENED:
                if event.table == table:
                    players[oid] = event.player_id
                continue
            if oid not in players:
                continue
            kind = n.topic.rsplit("/", 1)[1].split("@")[0]
            row: dict[str, Any] = {"position": n.id, "kind": kind, "player_id": players[oid]}
            row.update(at=event.at)
            if kind in ("posted", "hidden"):
                row.update(id=message_id(oid, event.number), number=event.number)
            if kind == "posted":
                row.update(author=event.author, text=event.text, session_id=event.session_id)
            else:
                row.update(by=event.by, reason=event.reason)
            if kind == "muted":
                row.update(until=event.until)
            if kind == "banned":
                row.update(banned=event.banned)
            entries.append(row)
            if len(entries) >= limit:
                break
        if len(page) < 500:
            break
    return ChatLog.model_validate({"table": table, "entries": entries, "next_after": position})
