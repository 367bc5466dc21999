"""Wire contracts of the log: event topics and persisted enum values, in one place.

Audit tools, projections and tests read topics and statuses from here instead of retyping
them. No eventsourcing import: ``audit_cli`` uses this without the application. Every value
here is stored in the log: never renamed (a new meaning gets a new value or version).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class RoundStatus(StrEnum):
    OPEN = "open"
    SETTLED = "settled"
    VOIDED = "voided"


class SessionStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


ROUND_PREFIX: Final = "croupier/round/"

ACCOUNT: Final = "croupier/account@1"
ACCOUNT_CREATED: Final = "croupier/account/created@1"
ACCOUNT_OPENED: Final = "croupier/account/opened@1"
ACCOUNT_DEPOSITED: Final = "croupier/account/deposited@1"
ACCOUNT_WITHDRAWN: Final = "croupier/account/withdrawn@1"
ACCOUNT_SESSION_FUNDED: Final = "croupier/account/session-funded@1"
ACCOUNT_SESSION_RETURNED: Final = "croupier/account/session-returned@1"
ACCOUNT_ROUND_REFUNDED: Final = "croupier/account/round-refunded@1"
ACCOUNT_ROUND_WIN_REVERSED: Final = "croupier/account/round-win-reversed@1"

SESSION: Final = "croupier/session@1"
SESSION_CREATED: Final = "croupier/session/created@1"
SESSION_OPENED: Final = "croupier/session/opened@1"
SESSION_STAKE_DEBITED: Final = "croupier/session/stake-debited@1"
SESSION_WIN_CREDITED: Final = "croupier/session/win-credited@1"
SESSION_REFUNDED: Final = "croupier/session/refunded@1"
SESSION_WIN_REVERSED: Final = "croupier/session/win-reversed@1"
SESSION_ROUND_OPENED: Final = "croupier/session/round-opened@1"
SESSION_ROUND_CLOSED: Final = "croupier/session/round-closed@1"
SESSION_ROUND_SETTLED: Final = "croupier/session/round-settled@1"
"""A round's win credited and the round closed in one event (a live table's settlement:
what ``win-credited`` then ``round-closed`` record, which older logs hold)."""
SESSION_CLOSED: Final = "croupier/session/closed@1"

ROUND: Final = "croupier/round@1"
ROUND_CREATED: Final = "croupier/round/created@1"
ROUND_STARTED: Final = "croupier/round/started@1"
ROUND_ACTED: Final = "croupier/round/acted@1"
ROUND_SETTLED: Final = "croupier/round/settled@1"
ROUND_VOIDED: Final = "croupier/round/voided@1"

REQUEST: Final = "croupier/request@1"
REQUEST_CREATED: Final = "croupier/request/created@1"
REQUEST_ACCEPTED: Final = "croupier/request/accepted@1"

CHECKPOINT: Final = "croupier/checkpoint@1"
CHECKPOINT_CREATED: Final = "croupier/checkpoint/created@1"
CHECKPOINT_SEALED: Final = "croupier/checkpoint/sealed@1"


def round_step(topic: str) -> str:
    """``croupier/round/settled@1`` -> ``settled``."""
    return topic.split("/")[2].split("@")[0]


# -- Infinite Blackjack live tables (ledger/tables/) ----------------------------------------

TABLE: Final = "croupier/blackjack/table@1"
TABLE_CREATED: Final = "croupier/blackjack/table/created@1"
TABLE_OPENED: Final = "croupier/blackjack/table/opened@1"
TABLE_CONFIGURED: Final = "croupier/blackjack/table/configured@1"
TABLE_ROUND_STARTED: Final = "croupier/blackjack/table/round-started@1"
TABLE_SHOE_STARTED: Final = "croupier/blackjack/table/shoe-started@1"

SHOE: Final = "croupier/blackjack/shoe@1"
SHOE_CREATED: Final = "croupier/blackjack/shoe/created@1"
SHOE_SHUFFLED: Final = "croupier/blackjack/shoe/shuffled@1"
SHOE_REVEALED: Final = "croupier/blackjack/shoe/revealed@1"

TABLE_ROUND: Final = "croupier/blackjack/round@1"
TABLE_ROUND_CREATED: Final = "croupier/blackjack/round/created@1"
TABLE_ROUND_OPENED: Final = "croupier/blackjack/round/opened@1"
TABLE_ROUND_BETTING_REOPENED: Final = "croupier/blackjack/round/betting-reopened@1"
TABLE_ROUND_BETTING_WAITING: Final = "croupier/blackjack/round/betting-waiting@1"
TABLE_ROUND_DEALT: Final = "croupier/blackjack/round/dealt@1"
TABLE_ROUND_INSURANCE_CLOSED: Final = "croupier/blackjack/round/insurance-closed@1"
TABLE_ROUND_STEP_CLOSED: Final = "croupier/blackjack/round/step-closed@1"
TABLE_ROUND_DEALER_PLAYED: Final = "croupier/blackjack/round/dealer-played@1"
TABLE_ROUND_SETTLED: Final = "croupier/blackjack/round/settled@1"
TABLE_ROUND_PAUSED: Final = "croupier/blackjack/round/paused@1"
TABLE_ROUND_RESUMED: Final = "croupier/blackjack/round/resumed@1"
TABLE_ROUND_VOIDED: Final = "croupier/blackjack/round/voided@1"

TABLE_ROUND_CODE: Final = "croupier/blackjack/round-code@1"
TABLE_ROUND_CODE_CREATED: Final = "croupier/blackjack/round-code/created@1"
TABLE_ROUND_CODE_RECORDED: Final = "croupier/blackjack/round-code/recorded@1"

SEAT: Final = "croupier/blackjack/seat@1"
SEAT_CREATED: Final = "croupier/blackjack/seat/created@1"
SEAT_OPENED: Final = "croupier/blackjack/seat/opened@1"
SEAT_BET_PLACED: Final = "croupier/blackjack/seat/bet-placed@1"
SEAT_BET_UNDONE: Final = "croupier/blackjack/seat/bet-undone@1"
SEAT_BETS_CANCELLED: Final = "croupier/blackjack/seat/bets-cancelled@1"
SEAT_DECIDED: Final = "croupier/blackjack/seat/decided@1"
SEAT_CONNECTION: Final = "croupier/blackjack/seat/connection@1"
SEAT_SETTLED: Final = "croupier/blackjack/seat/settled@1"
SEAT_VOIDED: Final = "croupier/blackjack/seat/voided@1"
# Where a session's table connections are held, across processes (ledger/presence.py)
TABLE_PRESENCE: Final = "croupier/blackjack/presence@1"
TABLE_PRESENCE_CREATED: Final = "croupier/blackjack/presence/created@1"
TABLE_PRESENCE_OPENED: Final = "croupier/blackjack/presence/opened@1"
TABLE_PRESENCE_HELD: Final = "croupier/blackjack/presence/held@1"
TABLE_PRESENCE_RELEASED: Final = "croupier/blackjack/presence/released@1"
PRESENCE_WORKER: Final = "croupier/presence-worker@1"
PRESENCE_WORKER_CREATED: Final = "croupier/presence-worker/created@1"
PRESENCE_WORKER_STARTED: Final = "croupier/presence-worker/started@1"
PRESENCE_WORKER_BEAT: Final = "croupier/presence-worker/beat@1"
# A seamless seat's debits at the operator's wallet (issue 16): taken, and given back.
SEAT_WALLET_DEBITED: Final = "croupier/blackjack/seat/wallet-debited@1"
SEAT_WALLET_RETURNED: Final = "croupier/blackjack/seat/wallet-returned@1"

# -- player settings (seed 002 "Impostazioni"; ledger/player_settings.py) -------------------

PLAYER_SETTINGS: Final = "croupier/player-settings@1"
PLAYER_SETTINGS_CREATED: Final = "croupier/player-settings/created@1"
PLAYER_SETTINGS_OPENED: Final = "croupier/player-settings/opened@1"
PLAYER_SETTINGS_CHANGED: Final = "croupier/player-settings/changed@1"

# -- seamless wallet (ledger/seamless/): the session's calls to the operator's wallet -------


class WalletMode(StrEnum):
    TRANSFER = "transfer"
    SEAMLESS = "seamless"


class DebitOutcome(StrEnum):
    ACCEPTED = "accepted"
    REFUSED = "refused"
    UNKNOWN = "unknown"


SESSION_STAKE_INTENDED: Final = "croupier/session/stake-intended@1"
SESSION_STAKE_RESOLVED: Final = "croupier/session/stake-resolved@1"
SESSION_WALLET_CALL_QUEUED: Final = "croupier/session/wallet-call-queued@1"

WALLET_DELIVERY: Final = "croupier/wallet-delivery@1"
WALLET_DELIVERY_CREATED: Final = "croupier/wallet-delivery/created@1"
WALLET_DELIVERED: Final = "croupier/wallet-delivery/delivered@1"

GAME_CODE_CLAIM: Final = "croupier/game-code-claim@1"
GAME_CODE_CLAIM_CREATED: Final = "croupier/game-code-claim/created@1"
GAME_CODE_CLAIMED: Final = "croupier/game-code-claim/claimed@1"


def wallet_ledger(operator: str, player_token: str) -> str:
    """The ledger name of a player's money at the operator's wallet (outside croupier)."""
    return f"wallet:{operator}:{player_token}"


# -- significant events (issue 29; ledger/significant.py): what a regulator calls significant
# and the log did not already hold as an event of its own.

SIGNIFICANT: Final = "croupier/significant-event@1"
SIGNIFICANT_CREATED: Final = "croupier/significant-event/created@1"
SIGNIFICANT_RECORDED: Final = "croupier/significant-event/recorded@1"


class SignificantKind(StrEnum):
    SERVER_STARTED = "server-started"
    SERVER_STOPPED = "server-stopped"
    SEALER_REFUSED = "sealer-refused"
    VERIFY_RUN = "verify-run"
    WALLET_UNAVAILABLE = "wallet-unavailable"
    WALLET_AVAILABLE = "wallet-available"


# -- table chat (seed 002 "messaggi chat"; ledger/chat.py): one aggregate per player ---------

CHAT_MEMBER: Final = "croupier/chat-member@1"
CHAT_MEMBER_CREATED: Final = "croupier/chat-member/created@1"
CHAT_MEMBER_OPENED: Final = "croupier/chat-member/opened@1"
CHAT_POSTED: Final = "croupier/chat-member/posted@1"
CHAT_HIDDEN: Final = "croupier/chat-member/hidden@1"
CHAT_MUTED: Final = "croupier/chat-member/muted@1"
CHAT_BANNED: Final = "croupier/chat-member/banned@1"
