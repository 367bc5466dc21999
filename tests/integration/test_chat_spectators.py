"""The table chat and spectators over real HTTP (issue 24; uvicorn in a thread on the
runner's fake clock, the streams read event by event, no sleeps).

Chat: plain text reaches the players who show it and never one who hides it (followed
live when the setting changes); limits answer 422 / 429 with ``Retry-After``; a muted or
banned player is refused with a typed error, and a refusal writes nothing; every message
and moderation action is in the log with its author and reason. Spectators: a token the
operator issues for one table; its stream has the table's messages and never a seat's, a
balance or options; it cannot act, and its streams count toward the limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from api.chat import ChatEntry
from ledger.tables import views as queries
from tests.integration.test_http_table_stream import OPERATOR, Served, Stream, served, stream

__all__ = ["served"]  # the fixture, imported for the tests below

OP = {"Authorization": f"Bearer {OPERATOR}"}
SCRIPT = '<script>window.pwned=1</script><img src=x onerror="alert(1)"> & <b>hi</b>'


def key(s: Served) -> dict[str, str]:
    return {"Idempotency-Key": s.live.rid()}


def say(s: Served, session: str, text: str) -> Any:
    headers = {"Authorization": f"Bearer {s.token(session)}", **key(s)}
    return s.client.post(
        f"/v1/sessions/{session}/tables/T1/chat", json={"text": text}, headers=headers
    )


def show_chat(s: Served, session: str, shown: bool) -> None:
    headers = {"Authorization": f"Bearer {s.token(session)}", **key(s)}
    body = {"show_chat": shown}
    r = s.client.post(f"/v1/sessions/{session}/settings", json=body, headers=headers)
    assert r.status_code == 200, r.text


def spectator_token(s: Served, table: str = "T1") -> str:
    r = s.client.post(f"/v1/tables/{table}/spectators", json={}, headers={**OP, **key(s)})
    assert r.status_code == 200, r.text
    assert r.json()["play"].startswith("/play/#table=")
    token: str = r.json()["token"]
    return token


@contextmanager
def watching(s: Served, token: str) -> Iterator[Stream]:
    with s.client.stream(
        "GET", "/v1/tables/T1/stream", headers={"Authorization": f"Bearer {token}"}
    ) as r:
        assert r.status_code == 200, r.read()
        yield Stream(r)


def log_top(s: Served) -> int:
    return int(s.live.app.recorder.max_notification_id() or 0)


PRIVATE = ("bet-accepted", "bet-undone", "balance", "options", "decided", "seat-settled")


def test_chat_is_plain_text_to_players_who_show_it_never_to_one_who_hides_it(
    served: Served,
) -> None:
    s = served
    ann, bob, cat = (s.live.player(n) for n in ("ann", "bob", "cat"))
    s.live.tick()
    show_chat(s, cat, False)
    watcher = spectator_token(s)
    with stream(s, ann) as a, stream(s, cat) as c, watching(s, watcher) as w:
        s.live.bet(ann, "main", 1_000)
        a.until(lambda e: e.type == "bet-accepted")
        r = say(s, bob, f"  {SCRIPT}  ")
        assert r.status_code == 200, r.text
        posted = r.json()
        assert posted["text"] == SCRIPT  # trimmed, otherwise exactly as sent
        assert "bob" not in posted["author"]
        got = a.until(lambda e: e.type == "chat")
        assert got.data == {
            "type": "chat",
            "id": posted["id"],
            "author": posted["author"],
            "text": SCRIPT,
            "at": posted["at"],
        }
        seen = w.until(lambda e: e.type == "chat")
        assert seen.data["text"] == SCRIPT
        s.live.tick(10_000)  # the deal: a table message every client gets, after the chat
        c.until(lambda e: e.type == "bets-closed")
        assert not [e for e in c.events if e.type.startswith("chat")]
        # cat shows the chat again: the open stream follows the setting
        show_chat(s, cat, True)
        assert say(s, bob, "welcome back").status_code == 200
        back = c.until(lambda e: e.type == "chat")
        assert back.data["text"] == "welcome back"
        # the operator hides bob's first message: every client is told which one
        r = s.client.post(
            "/v1/tables/T1/chat/players/bob/messages/1/hide",
            json={"reason": "markup spam"},
            headers={**OP, **key(s)},
        )
        assert r.status_code == 200, r.text
        assert a.until(lambda e: e.type == "chat-hidden").data["id"] == posted["id"]
        w.until(lambda e: e.type == "chat-hidden")
    for e in w.events:
        assert e.type not in PRIVATE, e.raw
        for sid in (ann, bob, cat):
            assert sid not in e.raw
        assert "bob" not in e.raw and "ann" not in e.raw
    # a client that reconnects from before the chat with chat hidden gets none of it
    show_chat(s, cat, False)
    first = next(e.id for e in a.events if e.id is not None)
    with stream(s, cat, **{"Last-Event-ID": str(first)}) as again:
        again.until(lambda e: e.type == "bets-closed")
        assert not [e for e in again.events if e.type.startswith("chat")]
    # the operator reads the whole chat with its authors and the hide's reason
    r = s.client.get("/v1/tables/T1/chat", headers=OP)
    entries = [ChatEntry.model_validate(x) for x in r.json()["entries"]]
    assert [(x.kind, x.player_id, x.text or x.reason) for x in entries] == [
        ("posted", "bob", SCRIPT),
        ("posted", "bob", "welcome back"),
        ("hidden", "bob", "markup spam"),
    ]
    assert entries[0].session_id == bob


def test_chat_limits_and_moderation_refuse_with_typed_errors_and_write_nothing(
    served: Served,
) -> None:
    s = served
    ann, bob = s.live.player("ann"), s.live.player("bob")
    s.live.tick()
    top = log_top(s)
    for text, code in (("x" * 201, "chat-message-invalid"), ("   ", "chat-message-invalid")):
        r = say(s, ann, text)
        assert (r.status_code, r.json()["code"]) == (422, code), r.text
    r = say(s, ann, "line one\nline two")
    assert (r.status_code, r.json()["code"]) == (422, "chat-message-invalid")
    r = say(s, ann, "x" * 2001)  # beyond any setting: the body itself is refused
    assert r.status_code == 422
    assert log_top(s) == top
    assert say(s, ann, "y" * 200).status_code == 200
    for i in range(4):
        assert say(s, ann, f"hello {i}").status_code == 200
    top = log_top(s)
    r = say(s, ann, "one too many")  # 5 in 10 s (the defaults) on the fake clock
    assert (r.status_code, r.json()["code"]) == (429, "chat-rate-limited"), r.text
    assert r.headers["Retry-After"] == "10"
    assert log_top(s) == top
    s.live.clock.advance(10_001)
    assert say(s, ann, "later").status_code == 200
    # the operator mutes bob: his message is refused, typed, and nothing is written
    r = s.client.post(
        "/v1/tables/T1/chat/players/bob/mute",
        json={"minutes": 5, "reason": "insults"},
        headers={**OP, **key(s)},
    )
    assert r.status_code == 200, r.text
    assert r.json()["muted_until"] is not None
    top = log_top(s)
    r = say(s, bob, "let me talk")
    assert (r.status_code, r.json()["code"]) == (403, "chat-muted"), r.text
    assert "until" in r.json()
    assert log_top(s) == top
    s.live.clock.advance(5 * 60_000 + 1)
    assert say(s, bob, "I am back").status_code == 200
    r = s.client.post(
        "/v1/tables/T1/chat/players/bob/ban",
        json={"reason": "again"},
        headers={**OP, **key(s)},
    )
    assert r.status_code == 200
    r = say(s, bob, "and now?")
    assert (r.status_code, r.json()["code"]) == (403, "chat-banned")
    # moderation is the operator's: a player's token cannot, an unknown message is 404
    r = s.client.post(
        "/v1/tables/T1/chat/players/bob/mute",
        json={"minutes": 5, "reason": "x"},
        headers={"Authorization": f"Bearer {s.token(ann)}", **key(s)},
    )
    assert r.status_code == 403
    r = s.client.post(
        "/v1/tables/T1/chat/players/bob/messages/9/hide",
        json={"reason": "x"},
        headers={**OP, **key(s)},
    )
    assert (r.status_code, r.json()["code"]) == (404, "chat-message-not-found")
    kinds = [e["kind"] for e in s.client.get("/v1/tables/T1/chat", headers=OP).json()["entries"]]
    assert kinds == ["posted"] * 6 + ["muted", "posted", "banned"]


def test_a_spectator_watches_one_table_never_a_seat_and_cannot_act(served: Served) -> None:
    s = served
    ann = s.live.player("ann")
    s.live.tick()
    r = s.client.post(
        "/v1/tables/T1/spectators",
        json={},
        headers={"Authorization": f"Bearer {s.token(ann)}", **key(s)},
    )
    assert r.status_code == 403  # the operator issues spectator tokens
    r = s.client.post("/v1/tables/nope/spectators", json={}, headers={**OP, **key(s)})
    assert r.status_code == 404
    token = spectator_token(s)
    bearer = {"Authorization": f"Bearer {token}"}
    with watching(s, token) as w, stream(s, ann) as a:
        s.live.bet(ann, "main", 1_000)
        s.live.bet(ann, "perfect-pairs", 100)
        a.until(lambda e: e.type == "balance")
        s.live.tick(10_000)
        closed = w.until(lambda e: e.type == "bets-closed").data
        assert closed["seats"] == 1
        view = s.client.get("/v1/tables/T1/watch", headers=bearer)
        assert view.status_code == 200, view.text
        body = view.json()
        settled_at_deal = body["round"]["code"] != closed["code"]
        if not settled_at_deal:
            assert body["round"]["seats"] == 1, body
        else:
            # A dealer's blackjack under a ten settles the round at the deal (about one
            # shoe in forty here): the table already shows the next round, with no seat.
            w.until(lambda e: e.type == "round-settled" and e.data["code"] == closed["code"])
            assert body["round"]["number"] == closed["number"] + 1, body
            assert body["round"]["seats"] == 0, body
        assert set(body) == {"table", "currency", "round", "statistics", "server_time"}
        # the third stream of one spectator token is refused, like a session's
        with watching(s, token):
            r = s.client.get("/v1/tables/T1/stream", headers=bearer)
            assert (r.status_code, r.json()["code"]) == (429, "too-many-streams")
        if not settled_at_deal:
            rnd = queries.current_round(s.live.app, queries.table(s.live.app, "T1"))
            assert rnd is not None
            for _ in range(30):
                if rnd.closed:
                    break
                s.live.tick(10_000)
                rnd = queries.current_round(s.live.app, queries.table(s.live.app, "T1"))
                assert rnd is not None
            w.until(lambda e: e.type == "round-settled")
        a.until(lambda e: e.type == "round-settled")
    assert {e.type for e in a.events} & {"bet-accepted", "balance", "seat-settled"}
    for e in w.events:
        assert e.type not in PRIVATE, e.raw
        assert ann not in e.raw
        assert "balance" not in json.dumps(e.data)
    # it cannot act, chat, read a seat or watch another table
    top = log_top(s)
    for method, path, body in (
        ("POST", f"/v1/sessions/{ann}/tables/T1/bets", {"bet": "main", "amount": 100}),
        ("POST", f"/v1/sessions/{ann}/tables/T1/chat", {"text": "hi"}),
        ("GET", f"/v1/sessions/{ann}/tables/T1", None),
        ("GET", f"/v1/sessions/{ann}/settings", None),
    ):
        r = s.client.request(method, path, json=body, headers={**bearer, **key(s)})
        assert r.status_code == 403, (path, r.text)
    assert log_top(s) == top
    other = spectator_token(s).replace(".T1.", ".T2.")
    assert (
        s.client.get(
            "/v1/tables/T1/watch", headers={"Authorization": f"Bearer {other}"}
        ).status_code
        == 401
    )
    r = s.client.get("/v1/tables/T1/watch", headers={"Authorization": f"Bearer {s.token(ann)}"})
    assert r.status_code == 403


def test_the_open_round_of_a_seated_session_is_none_not_a_404(served: Served) -> None:
    """A seat in a live round is resumed by the table state; the session's open-round
    route (which the reference client reads to resume Red Dog or poker) answers no round
    instead of 404 ``round-not-found`` for a table's game code."""
    s = served
    ann = s.live.player("ann")
    s.live.tick()
    s.live.bet(ann, "main", 1_000)
    me = {"Authorization": f"Bearer {s.token(ann)}"}
    r = s.client.get(f"/v1/sessions/{ann}/round", headers=me)
    assert r.status_code == 200, r.text
    assert r.json()["round"] is None
    assert s.client.get(f"/v1/sessions/{ann}", headers=me).json()["open_round"].startswith("IBJ-")
