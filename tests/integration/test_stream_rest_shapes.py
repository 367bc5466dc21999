"""A game client reads the same shapes from the stream and from REST (issue 23): a seat's
``options`` are ``[{decision, amount}]`` in both."""

from __future__ import annotations

from api.table_schemas import OptionView
from ledger.tables import views as queries
from tests.conftest import Store
from tests.integration.stream_helpers import Streamed, read
from tests.integration.test_table_stream import CONFIG, ELEVEN


def test_the_streamed_options_have_the_rest_state_shape(store: Store) -> None:
    t = Streamed(store, CONFIG, ELEVEN)
    ann = t.player("ann")
    t.step()
    sub = t.subscribe(ann)
    t.bet(ann, "main", 1_000)
    t.step(10_000)  # dealt: 5-6 against a 9, ann may hit, stand or double
    streamed = [e for e in read(sub) if e.type == "options" and e.data["options"]][-1]
    rest = queries.session_view(t.app, "T1", ann)["options"]
    assert streamed.data["options"] == rest
    for option in streamed.data["options"]:
        OptionView.model_validate(option)  # the REST schema accepts each streamed option
    assert {o["decision"] for o in rest} >= {"hit", "stand", "double"}
