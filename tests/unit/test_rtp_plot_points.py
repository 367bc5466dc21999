"""``audit-cli rtp --plot``: the blackjack panel after one settled round shows that round
(a one-point line without a marker draws nothing, so the panel looked empty)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from audit_cli.rtp import _plot_tables
from audit_cli.table_rtp import BetRow


def test_one_round_of_a_bet_type_is_drawn_as_a_visible_point() -> None:
    row = BetRow("main", "main, ten-up all-bets")
    row.add("IBJ-1", staked=1000, returned=0, base=1000, value=0)
    fig, ax = plt.subplots()
    try:
        _plot_tables(ax, [row], np)
        observed = next(line for line in ax.get_lines() if line.get_label() == "main")
        assert len(observed.get_xdata()) == 1
        assert observed.get_marker() not in (None, "None", "", " ")
    finally:
        plt.close(fig)
