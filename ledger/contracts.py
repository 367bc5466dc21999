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
