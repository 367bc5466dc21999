"""Auditor endpoints (read-only auditor token): checkpoints, proofs, the raw log, keys.

Everything here is what ``audit-cli`` can also read from the database: signed tree heads,
RFC 9162 inclusion and consistency proofs, and the stored events byte for byte (their
signed envelopes; round seeds stay sealed until the round ends).
"""

from __future__ import annotations

import base64
import json
from typing import Annotated
from uuid import UUID

from eventsourcing.persistence import Notification
from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response

from api import auth
from api.common import ERRORS, casino
from api.errors import ApiError
from api.schemas import (
    GAME_CODE_PATTERN,
    CheckpointView,
    ConsistencyProof,
    EventProof,
    InclusionProof,
    PublicKeys,
)
from ledger import checkpoints, merkle
from ledger.casino import Casino
from ledger.checkpoints import Checkpoint
from ledger.store import VerifyingMapper

router = APIRouter(
    prefix="/v1/audit", tags=["auditor"], dependencies=[Depends(auth.auditor)], responses=ERRORS
)

App = Annotated[Casino, Depends(casino)]
Seq = Annotated[int, Path(ge=1, le=2**62, description="checkpoint sequence number")]
NDJSON = "application/x-ndjson"
MAX_EVENTS = 10_000


def _checkpoint(app: Casino, seq: int | None) -> Checkpoint:
    cp = app.sealer.get(seq) if seq else app.sealer.latest()
    if cp is None:
        what = f"no checkpoint {seq}" if seq else "no checkpoint has been written yet"
        raise ApiError(404, "checkpoint-not-found", what, seq=seq)
    return cp


def _view(app: Casino, cp: Checkpoint) -> CheckpointView:
    """A tree head with the log id it is signed under (format 2: every checkpoint written
    after the log's genesis; a legacy log's older checkpoints are format 1, no log id)."""
    history = app.key_history
    signed_under = cp.last_notification_id >= history.genesis_notification_id
    log_id = history.log_id.hex() if signed_under else None
    return CheckpointView.model_validate({**cp.view(), "log_id": log_id})


@router.get("/checkpoints/latest", response_model=CheckpointView)
def latest_checkpoint(app: App) -> CheckpointView:
    """The newest signed tree head (size, root hash, time, key id, Ed25519 signature)."""
    return _view(app, _checkpoint(app, None))


@router.get("/checkpoints/{seq}", response_model=CheckpointView)
def get_checkpoint(seq: Seq, app: App) -> CheckpointView:
    return _view(app, _checkpoint(app, seq))


@router.get("/consistency", response_model=ConsistencyProof)
def consistency(
    app: App,
    old: Annotated[int, Query(ge=1, le=2**62, description="older checkpoint seq")],
    new: Annotated[int, Query(ge=1, le=2**62, description="newer checkpoint seq")],
) -> ConsistencyProof:
    """RFC 9162 consistency proof: the newer tree extends the older one unchanged."""
    if old > new:
        raise ApiError(422, "invalid-request", "old must not be after new", old=old, new=new)
    old_cp, new_cp = _checkpoint(app, old), _checkpoint(app, new)
    hashes = _leaf_hashes(app, new_cp)
    proof = merkle.consistency_proof(hashes, old_cp.tree_size, new_cp.tree_size)
    return ConsistencyProof(
        old=_view(app, old_cp), new=_view(app, new_cp), proof=[p.hex() for p in proof]
    )


@router.get("/rounds/{game_code}/inclusion", response_model=InclusionProof)
def round_inclusion(
    app: App,
    game_code: Annotated[str, Path(pattern=GAME_CODE_PATTERN)],
    checkpoint: Annotated[
        int | None, Query(ge=1, le=2**62, description="checkpoint seq (default: the newest)")
    ] = None,
) -> InclusionProof:
    """Inclusion proofs of every event of one round in a checkpoint's Merkle tree."""
    rnd = app.find_round(game_code)
    return inclusion(app, rnd.code, rnd.id, {rnd.id}, checkpoint)


def inclusion(
    app: Casino, code: str, round_id: UUID, originators: set[UUID], checkpoint: int | None
) -> InclusionProof:
    """Inclusion proofs of every event of the aggregates ``originators`` (one round's) in
    a checkpoint's Merkle tree (default: the newest)."""
    cp = _checkpoint(app, checkpoint)
    hashes: list[bytes] = []
    mine: list[tuple[int, Notification]] = []
    for note in checkpoints.iter_notifications(app):
        if len(hashes) >= cp.tree_size:
            break
        if note.originator_id in originators:
            mine.append((len(hashes), note))
        hashes.append(_leaf_hash(app, note))
    if not mine:
        raise ApiError(
            404,
            "not-covered",
            f"checkpoint {cp.seq} does not cover this round yet; retry after the next one",
            game_code=code,
        )
    events = []
    for index, note in mine:
        events.append(
            EventProof(
                originator_id=str(note.originator_id),
                version=note.originator_version,
                topic=note.topic,
                notification_id=note.id,
                leaf_index=index,
                leaf_hash=hashes[index].hex(),
                proof=[p.hex() for p in merkle.inclusion_proof(hashes, index, cp.tree_size)],
            )
        )
    return InclusionProof(
        game_code=code, round_id=str(round_id), checkpoint=_view(app, cp), events=events
    )


def _leaf_hash(app: Casino, note: Notification) -> bytes:
    # The leaf entry of an event is its event hash (README); opening it verifies it.
    assert isinstance(app.mapper, VerifyingMapper)
    return merkle.leaf_hash(app.mapper.open(note)[2])


def _leaf_hashes(app: Casino, cp: Checkpoint) -> list[bytes]:
    hashes: list[bytes] = []
    for note in checkpoints.iter_notifications(app):
        if len(hashes) >= cp.tree_size:
            break
        hashes.append(_leaf_hash(app, note))
    return hashes


@router.get(
    "/events",
    response_class=Response,
    responses={
        200: {
            "description": "one JSON object per line, in notification order",
            "content": {
                NDJSON: {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "notification_id": {"type": "integer"},
                            "originator_id": {"type": "string"},
                            "originator_version": {"type": "integer"},
                            "topic": {"type": "string"},
                            "state_b64": {"type": "string"},
                        },
                    }
                }
            },
        }
    },
)
def events(
    app: App,
    after: Annotated[int, Query(ge=0, le=2**62, description="last notification id seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENTS)] = 1000,
) -> Response:
    """The stored events after notification ``after`` as JSON lines, ``state_b64`` being
    the stored bytes (signed envelope). Page with the last line's ``notification_id``."""
    page = app.recorder.select_notifications(start=after + 1, limit=limit, inclusive_of_start=True)
    lines = [
        json.dumps(
            {
                "notification_id": n.id,
                "originator_id": str(n.originator_id),
                "originator_version": n.originator_version,
                "topic": n.topic,
                "state_b64": base64.b64encode(n.state).decode(),
            }
        )
        + "\n"
        for n in page
    ]
    headers = {"X-Last-Notification-Id": str(page[-1].id if page else after)}
    return Response("".join(lines), media_type=NDJSON, headers=headers)


@router.get("/keys", response_model=PublicKeys)
def public_keys(app: App) -> PublicKeys:
    """Every signing public key with its fingerprint (the file ``audit-cli verify --keys``
    takes)."""
    return PublicKeys.model_validate(app.keyring.public_document())
