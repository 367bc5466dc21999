"""The table chat of seed 002 ("nascondere/visualizzare i messaggi chat degli altri
giocatori"): players send short plain-text messages to a live table; the operator mutes,
bans and hides.

Every message and every moderation action is an event in the signed log, with its time
and author, like a bet: a regulator asks for chat to be kept as long as the game records
(it is where a player reports a malfunction, seed 002 "Gestione degli errori"), and the
signed log is the one store here that is append-only, tamper-evident and covered by the
checkpoints and the retention of the rest. A second append-only store would need its own
sealing, backups and audit; it would buy nothing but separation.

One :class:`ChatMember` aggregate per player *and table* (its id derives from both): a
message and the moderation that governs it are checked and written on the same aggregate,
so a message sent while the operator mutes its author is ordered before or after the mute
(a version conflict re-runs the command), never both. A player's messages contend only
with that player's own: a per-table chat aggregate would be the long-lived hot aggregate
DESIGN §1.1 rules out (every player of a busy table writing one aggregate). Moderation is
per table, as a table's chat moderator acts; the rate limit is counted from the recorded
times of the member's last messages, so it holds across processes and restarts.

Messages are plain text: stored as sent (after trimming), never interpreted; the
reference client renders them with ``textContent``. No control characters (one line).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.commands import Command, SessionCommand
from ledger.errors import (
    ChatBanned,
    ChatMessageInvalid,
    ChatMessageNotFound,
    ChatMuted,
    ChatRateLimited,
    InvalidRequest,
    SessionClosed,
)
from ledger.results import ChatModerated, ChatPosted
from ledger.unit_of_work import UnitOfWork

MODERATOR = "operator"
"""Who moderates: the operator credential (the one that may)."""
KEPT_TIMES = 50
"""Times of a member's last messages kept for the rate limit (the limit is at most this)."""


def member_id_for(table: str, player_id: str) -> UUID:
    return uuid5(NAMESPACE, f"chat-member:{table}:{player_id}")


def author_of(member: UUID) -> str:
    """The name the table shows for a member: a pseudonym, never the player id (the other
    players and spectators see it), stable at this table only."""
    return f"Player {member.hex[:6].upper()}"


def message_id(member: UUID, number: int) -> str:
    """A message's id on the stream (``chat-hidden`` names it): member and number."""
    return f"{member.hex[:16]}-{number}"


class ChatMember(Aggregate):
    TOPIC = contracts.CHAT_MEMBER

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.CHAT_MEMBER_CREATED

    @staticmethod
    def create_id(table: str, player_id: str) -> UUID:
        return member_id_for(table, player_id)

    @event("Opened", topic=contracts.CHAT_MEMBER_OPENED)
    def __init__(self, table: str, player_id: str) -> None:
        self.table = table
        self.player_id = player_id
        self.posted = 0
        self.recent: list[str] = []
        self.hidden: list[int] = []
        self.muted_until: str | None = None
        self.banned = False

    @event("Posted", topic=contracts.CHAT_POSTED)
    def post(
        self, table: str, number: int, author: str, text: str, at: str, session_id: str
    ) -> None:
        self.posted = number
        self.recent = [*self.recent, at][-KEPT_TIMES:]

    @event("Hidden", topic=contracts.CHAT_HIDDEN)
    def hide(self, table: str, number: int, by: str, reason: str, at: str) -> None:
        self.hidden = [*self.hidden, number]

    @event("Muted", topic=contracts.CHAT_MUTED)
    def mute(self, until: str | None, by: str, reason: str, at: str) -> None:
        self.muted_until = until

    @event("Banned", topic=contracts.CHAT_BANNED)
    def ban(self, banned: bool, by: str, reason: str, at: str) -> None:
        self.banned = banned


# -- commands ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PostChat(SessionCommand[ChatPosted]):
    """A player's message to a table's chat (the game client of one of the player's
    sessions)."""

    name: ClassVar[str] = "post_chat"
    table: str
    text: str


def _reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > 500:
        raise InvalidRequest("a moderation action needs a reason (at most 500 characters)")
    return reason.strip()


@dataclass(frozen=True)
class MuteChat(Command[ChatModerated]):
    """Operator: the player may not send to the table's chat for ``minutes`` (0 lifts a
    mute)."""

    name: ClassVar[str] = "mute_chat"
    table: str
    player_id: str
    minutes: int
    reason: str

    def __post_init__(self) -> None:
        if type(self.minutes) is not int or not 0 <= self.minutes <= 525_600:
            raise InvalidRequest("minutes is a whole number from 0 (unmute) to 525600")
        _reason(self.reason)


@dataclass(frozen=True)
class BanChat(Command[ChatModerated]):
    """Operator: the player is banned from the table's chat (``banned`` false lifts it)."""

    name: ClassVar[str] = "ban_chat"
    table: str
    player_id: str
    reason: str
    banned: bool = True

    def __post_init__(self) -> None:
        _reason(self.reason)


@dataclass(frozen=True)
class HideChat(Command[ChatModerated]):
    """Operator: one message is hidden from the table (kept in the log, with the hide)."""

    name: ClassVar[str] = "hide_chat"
    table: str
    player_id: str
    number: int
    reason: str

    def __post_init__(self) -> None:
        _reason(self.reason)


def check_text(text: object, max_chars: int) -> str:
    """The message as stored: trimmed plain text of 1..``max_chars`` characters, one line."""
    if not isinstance(text, str):
        raise ChatMessageInvalid("a chat message is text")
    trimmed = text.strip()
    if not trimmed:
        raise ChatMessageInvalid("a chat message is not empty")
    if len(trimmed) > max_chars:
        raise ChatMessageInvalid(
            f"a chat message has at most {max_chars} characters ({len(trimmed)} sent)"
        )
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in trimmed):
        raise ChatMessageInvalid("a chat message is one line of text, no control characters")
    return trimmed


class Chat:
    """The chat's handlers, with its limits and the clock."""

    def __init__(
        self,
        clock: Callable[[], datetime],
        table_exists: Callable[[UnitOfWork, str], object],
        max_chars: int = 200,
        messages: int = 5,
        window_seconds: float = 10.0,
    ) -> None:
        self.clock = clock
        self.table_exists = table_exists
        self.max_chars = max_chars
        self.messages = min(messages, KEPT_TIMES)
        self.window_seconds = window_seconds

    def _member(self, uow: UnitOfWork, table: str, player_id: str) -> ChatMember:
        member = uow.get(ChatMember, member_id_for(table, player_id))
        if member is None:
            member = ChatMember(table=table, player_id=player_id)
            uow.add(member)
        return member

    def _now(self, uow: UnitOfWork) -> datetime:
        return uow.once("chat-now", self.clock)

    def post(self, uow: UnitOfWork, cmd: PostChat) -> ChatPosted:
        session = uow.session(cmd.session_id)
        if session.closed:
            raise SessionClosed("the game session is closed", session_id=cmd.session_id)
        self.table_exists(uow, cmd.table)
        text = check_text(cmd.text, self.max_chars)
        member = self._member(uow, cmd.table, session.player_id)
        now = self._now(uow)
        ids = {"table": cmd.table, "session_id": cmd.session_id}
        if member.banned:
            raise ChatBanned("the operator banned this player from the table's chat", **ids)
        if member.muted_until is not None and datetime.fromisoformat(member.muted_until) > now:
            raise ChatMuted(
                f"the operator muted this player's chat until {member.muted_until}",
                until=member.muted_until,
                **ids,
            )
        window = timedelta(seconds=self.window_seconds)
        inside = [t for t in member.recent if datetime.fromisoformat(t) > now - window]
        if len(inside) >= self.messages:
            oldest = datetime.fromisoformat(inside[-self.messages])
            wait = max(1, math.ceil((oldest + window - now).total_seconds()))
            raise ChatRateLimited(
                f"at most {self.messages} messages in {self.window_seconds:g} s; retry in {wait} s",
                retry_after=wait,
                **ids,
            )
        number = member.posted + 1
        at = now.isoformat(timespec="milliseconds")
        author = author_of(member.id)
        member.post(
            table=cmd.table,
            number=number,
            author=author,
            text=text,
            at=at,
            session_id=cmd.session_id,
        )
        return ChatPosted(
            table=cmd.table,
            id=message_id(member.id, number),
            number=number,
            author=author,
            text=text,
            at=at,
        )

    def _moderated(self, uow: UnitOfWork, table: str, player_id: str) -> ChatMember:
        self.table_exists(uow, table)
        uow.account(player_id)  # only a player with an account is moderated
        return self._member(uow, table, player_id)

    def _answer(
        self, member: ChatMember, action: str, at: str, hid: str | None = None
    ) -> ChatModerated:
        return ChatModerated(
            table=member.table,
            player_id=member.player_id,
            action=action,
            at=at,
            muted_until=member.muted_until,
            banned=member.banned,
            hidden=list(member.hidden),
            id=hid,
        )

    def mute(self, uow: UnitOfWork, cmd: MuteChat) -> ChatModerated:
        member = self._moderated(uow, cmd.table, cmd.player_id)
        now = self._now(uow)
        until = None
        if cmd.minutes:
            until = (now + timedelta(minutes=cmd.minutes)).isoformat(timespec="milliseconds")
        at = now.isoformat(timespec="milliseconds")
        member.mute(until=until, by=MODERATOR, reason=_reason(cmd.reason), at=at)
        return self._answer(member, "mute" if until else "unmute", at)

    def ban(self, uow: UnitOfWork, cmd: BanChat) -> ChatModerated:
        member = self._moderated(uow, cmd.table, cmd.player_id)
        at = self._now(uow).isoformat(timespec="milliseconds")
        member.ban(banned=bool(cmd.banned), by=MODERATOR, reason=_reason(cmd.reason), at=at)
        return self._answer(member, "ban" if cmd.banned else "unban", at)

    def hide(self, uow: UnitOfWork, cmd: HideChat) -> ChatModerated:
        member = self._moderated(uow, cmd.table, cmd.player_id)
        if type(cmd.number) is not int or not 1 <= cmd.number <= member.posted:
            raise ChatMessageNotFound(
                f"player {cmd.player_id!r} has no message {cmd.number} at {cmd.table}",
                table=cmd.table,
            )
        at = self._now(uow).isoformat(timespec="milliseconds")
        if cmd.number not in member.hidden:
            member.hide(
                table=cmd.table, number=cmd.number, by=MODERATOR, reason=_reason(cmd.reason), at=at
            )
        return self._answer(member, "hide", at, message_id(member.id, cmd.number))
