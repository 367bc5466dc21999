"""Session tokens that name their cell: ``"{cell}~{session token}"``, so a game client's
request is routed to its cell without a lookup.

Each cell signs its session tokens under its own secret, derived from the deployment's API
secret and the cell's name (HMAC-SHA256), so a token moved to another cell's prefix, or
sent to another cell, does not verify there. The operator's and auditor's tokens are the
deployment's, the same in every cell.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from dataclasses import dataclass

from api.auth import Caller, Credentials, Role

SEPARATOR = "~"  # a token68 character (RFC 7235), never in a cell name or a session token
_LABEL = b"croupier/cell-session-secret/v1\x00"


@dataclass(frozen=True)
class CellCredentials(Credentials):
    cell: str = ""

    def session_token(self, session_id: str) -> str:
        return f"{self.cell}{SEPARATOR}{super().session_token(session_id)}"

    def identify(self, token: str) -> Caller | None:
        caller = super().identify(token)
        if caller is not None and caller.role is not Role.SESSION:
            return caller  # the operator's or the auditor's token
        cell, sep, inner = token.partition(SEPARATOR)
        if not sep or cell != self.cell:
            return None  # a bare session token, or another cell's
        caller = super().identify(inner)
        return caller if caller is not None and caller.role is Role.SESSION else None


def token_cell(token: str) -> str | None:
    """The cell a session token names (None for any other token)."""
    cell, sep, _ = token.partition(SEPARATOR)
    return cell if sep else None


def for_cell(credentials: Credentials, cell: str) -> CellCredentials:
    secret = hmac.new(credentials.secret, _LABEL + cell.encode(), hashlib.sha256).digest()
    fields = {
        f.name: getattr(credentials, f.name) for f in dataclasses.fields(Credentials) if f.init
    }  # not the verified-token cache: each cell keeps its own
    fields["secret"] = secret
    return CellCredentials(**fields, cell=cell)
