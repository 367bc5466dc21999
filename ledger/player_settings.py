"""A player's game settings (seed 002 "Impostazioni"), stored with the player's account.

seed 002: "Le impostazioni selezionate verranno applicate tutte insieme e archiviate nel
tuo profilo ... lanciate automaticamente quando si accede da qualsiasi dispositivo": the
settings are changed all together and kept in the player's profile, so every device (every
game session of the player) gets them. One :class:`PlayerSettings` aggregate per account
(its id derives from the player id; it exists only for a player with an account), each
change one event holding the whole new set. The game client of any of the player's
sessions reads and changes them; the table state returns them and applies
``show_cash_out`` (a hidden cash-out is left out of the options shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.commands import SessionCommand
from ledger.errors import InvalidRequest
from ledger.results import SettingsChanged
from ledger.unit_of_work import UnitOfWork

DEFAULTS: dict[str, Any] = {
    "show_cash_out": True,
    "show_chat": True,
    "sound": True,
    "video_quality": "auto",
}
"""seed 002 GENERALE (chat of the other players, the INCASSARE decision shown or hidden),
VIDEO (automatic or a chosen stream), AUDIO (all sounds on or off)."""
VIDEO_QUALITIES = ("auto", "low", "medium", "high")


def settings_id_for(player_id: str) -> UUID:
    return uuid5(NAMESPACE, f"player-settings:{player_id}")


def check_settings(settings: object) -> dict[str, Any]:
    """The full set (defaults for what is left out), or :class:`InvalidRequest`."""
    if not isinstance(settings, dict):
        raise InvalidRequest("settings are a JSON object")
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise InvalidRequest(f"unknown settings {unknown}; known: {sorted(DEFAULTS)}")
    full = {**DEFAULTS, **settings}
    for name in ("show_cash_out", "show_chat", "sound"):
        if type(full[name]) is not bool:
            raise InvalidRequest(f"{name} is true or false")
    if full["video_quality"] not in VIDEO_QUALITIES:
        raise InvalidRequest(f"video_quality is one of {list(VIDEO_QUALITIES)}")
    return full


class PlayerSettings(Aggregate):
    TOPIC = contracts.PLAYER_SETTINGS

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.PLAYER_SETTINGS_CREATED

    @staticmethod
    def create_id(player_id: str) -> UUID:
        return settings_id_for(player_id)

    @event("Opened", topic=contracts.PLAYER_SETTINGS_OPENED)
    def __init__(self, player_id: str, settings: dict[str, Any]) -> None:
        self.player_id = player_id
        self.settings = dict(settings)

    @event("Changed", topic=contracts.PLAYER_SETTINGS_CHANGED)
    def changed(self, settings: dict[str, Any]) -> None:
        self.settings = dict(settings)


@dataclass(frozen=True)
class ChangeSettings(SessionCommand[SettingsChanged]):
    """The game client of one of the player's sessions sets the player's settings (all
    of them at once; one left out takes its default)."""

    name: ClassVar[str] = "change_player_settings"
    settings: dict[str, Any]


def change_settings(uow: UnitOfWork, cmd: ChangeSettings) -> SettingsChanged:
    session = uow.session(cmd.session_id)
    uow.account(session.player_id)  # settings are kept with an existing account
    full = check_settings(cmd.settings)
    record = uow.get(PlayerSettings, settings_id_for(session.player_id))
    if record is None:
        uow.add(PlayerSettings(player_id=session.player_id, settings=full))
    elif record.settings != full:
        record.changed(settings=full)
    return SettingsChanged(player_id=session.player_id, settings=full)


def settings_of(app: Any, player_id: str) -> dict[str, Any]:
    """The player's settings (the defaults until the player changes them)."""
    record = app.find(PlayerSettings, settings_id_for(player_id))
    return dict(DEFAULTS) if record is None else dict(record.settings)
