"""Random streams and shuffles: permutations, uniformity (chi-square), no modulo bias,
determinism and the documented stream format; and the lab collection tool.

The statistical tests run on fixed seeds, so they are deterministic: a pass is a pass
forever. Each one is paired with a deliberately broken generator that the same test, at
the same sample size and threshold, must reject, which shows it has the power to notice.
scipy is not installed, so the chi-square tail is computed here (regularised upper
incomplete gamma, checked against tabulated critical values below).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import permutations
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.cards import Card, full_deck
from games.red_dog.engine import DECK_LABEL, shuffled_deck
from games.rng import RandomStream, SeedError
from games.rnglab import deck_seed, decks, main, unbiased_ints

T = TypeVar("T")

ALPHA = 1e-3  # a fair generator must not be rejected at this level ...
POWER = 1e-9  # ... and a broken one must be rejected far below it

seeds = st.binary(min_size=32, max_size=32)
labels = st.text(max_size=20)


# --- chi-square tail ---------------------------------------------------------------------


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df) = Q(df/2, x/2), the regularised upper incomplete
    gamma function (series below a + 1, Lentz continued fraction above)."""
    if x <= 0:
        return 1.0
    a, z = df / 2.0, x / 2.0
    log_prefix = -z + a * math.log(z) - math.lgamma(a)
    if z < a + 1:
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-16:
            n += 1
            term *= z / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = z + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    i = 0
    while True:
        i += 1
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            return math.exp(log_prefix) * h


def uniform_p_value(counts: Sequence[int]) -> float:
    """Pearson chi-square p-value of ``counts`` against equal cell probabilities."""
    n = sum(counts)
    expected = n / len(counts)
    stat = sum((o - expected) ** 2 / expected for o in counts)
    return chi2_sf(stat, len(counts) - 1)


@pytest.mark.parametrize(
    ("x", "df", "p"),
    [
        (3.841458820694124, 1, 0.05),
        (6.634896601021214, 1, 0.01),
        (18.307038053275146, 10, 0.05),
        (35.17246162690806, 23, 0.05),
        (49.72823247, 23, 0.001),
        (2601.0, 2601, 0.4963),
        (0.0, 5, 1.0),
    ],
)
def test_chi_square_tail_matches_tabulated_values(x: float, df: int, p: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(p, rel=2e-3)


# --- shuffles are permutations ----------------------------------------------------------


@given(seeds, labels, st.lists(st.integers(), max_size=60))
def test_shuffles_are_permutations(seed: bytes, label: str, items: list[int]) -> None:
    before = list(items)
    out = RandomStream(seed, label).shuffled(items)
    assert sorted(out) == sorted(items)
    assert items == before  # shuffled() returns a copy


@given(seeds)
def test_every_red_dog_deck_is_the_52_cards(seed: bytes) -> None:
    deck = shuffled_deck(seed)
    assert len(deck) == 52
    assert set(deck) == set(full_deck())


@given(seeds, labels, st.integers(min_value=1, max_value=2**80))
def test_randbelow_stays_in_range(seed: bytes, label: str, bound: int) -> None:
    stream = RandomStream(seed, label)
    assert all(0 <= stream.randbelow(bound) < bound for _ in range(5))


def test_randbelow_refuses_non_positive_bounds() -> None:
    stream = RandomStream(bytes(32), "x")
    for bound in (0, -1):
        with pytest.raises(ValueError, match="positive"):
            stream.randbelow(bound)


@pytest.mark.parametrize("seed", [b"", bytes(31), bytes(33), "0" * 32])
def test_seeds_must_be_32_bytes(seed: object) -> None:
    with pytest.raises(SeedError):
        RandomStream(seed, "x")  # type: ignore[arg-type]


# --- determinism and the documented stream format ---------------------------------------


def reference_stream(seed: bytes, label: str, n: int) -> bytes:
    """games.rng's documented format, written out independently: block i is
    HMAC-SHA256(seed, b"croupier-rng/v1" 0x00 label 0x00 i_be64)."""
    out = b""
    i = 0
    while len(out) < n:
        msg = b"croupier-rng/v1\x00" + label.encode() + b"\x00" + i.to_bytes(8, "big")
        out += hmac.new(seed, msg, hashlib.sha256).digest()
        i += 1
    return out[:n]


@given(seeds, labels, st.lists(st.integers(min_value=0, max_value=70), max_size=8))
def test_stream_is_the_documented_hmac_counter_stream(
    seed: bytes, label: str, pieces: list[int]
) -> None:
    stream = RandomStream(seed, label)
    got = b"".join(stream.read(n) for n in pieces)
    assert got == reference_stream(seed, label, sum(pieces))


@given(seeds, labels)
def test_same_seed_and_label_give_the_same_stream(seed: bytes, label: str) -> None:
    a, b = RandomStream(seed, label), RandomStream(seed, label)
    assert [a.randbelow(1000) for _ in range(20)] == [b.randbelow(1000) for _ in range(20)]
    assert a.shuffled(range(52)) == b.shuffled(range(52))


@given(seeds, labels, labels)
def test_different_labels_give_different_streams(seed: bytes, one: str, other: str) -> None:
    if one != other:
        assert RandomStream(seed, one).read(32) != RandomStream(seed, other).read(32)


@given(seeds, seeds)
def test_different_seeds_give_different_decks(one: bytes, other: bytes) -> None:
    if one != other:
        assert RandomStream(one, "x").read(32) != RandomStream(other, "x").read(32)


def test_the_red_dog_deck_is_the_documented_shuffle_of_its_own_stream() -> None:
    seed = hashlib.sha256(b"deck-label").digest()
    expected = RandomStream(seed, "red-dog/deck").shuffled(full_deck())
    assert DECK_LABEL == "red-dog/deck"
    assert shuffled_deck(seed) == expected


# --- uniformity: card by position -------------------------------------------------------

N_DECKS = 20_000  # 385 expected per (position, card) cell; about 2 s per pass


def naive_shuffle(stream: RandomStream, items: Sequence[T]) -> list[T]:
    """The classic mistake: swap every position with ANY position (n^n paths)."""
    out = list(items)
    for i in range(len(out)):
        j = stream.randbelow(len(out))
        out[i], out[j] = out[j], out[i]
    return out


def sattolo_shuffle(stream: RandomStream, items: Sequence[T]) -> list[T]:
    """Fisher-Yates off by one (j < i): only cyclic permutations, no card stays put."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = stream.randbelow(i)
        out[i], out[j] = out[j], out[i]
    return out


def position_p_values(shuffles: Iterable[Sequence[Card]]) -> tuple[float, list[float]]:
    """(p of the whole 52 x 52 card-by-position table, p of each of positions 0..2).

    Each shuffle adds a permutation matrix. For a uniform permutation of n the
    standardised cell counts have covariance n/(n-1) times a projection of rank (n-1)^2
    (each row and each column sums to a constant), so Pearson's statistic over the table
    is (n/(n-1)) chi-square((n-1)^2): its mean is n(n-1), not (n-1)^2. A single row
    (one position) is multinomial, so its statistic is chi-square(n-1).
    """
    n = 52
    table = [[0] * n for _ in range(n)]
    total = 0
    for deck in shuffles:
        total += 1
        for position, card in enumerate(deck):
            table[position][card.id] += 1
    expected = total / n
    stat = sum((o - expected) ** 2 / expected for row in table for o in row)
    whole = chi2_sf(stat * (n - 1) / n, (n - 1) ** 2)
    return whole, [uniform_p_value(table[position]) for position in range(3)]


def test_red_dog_decks_are_uniform_card_by_position() -> None:
    # The production path: a fresh HMAC-derived seed per deck, the engine's own shuffle.
    whole, first_three = position_p_values(decks(b"\x01" * 32, N_DECKS))
    assert whole > ALPHA
    assert min(first_three) > ALPHA  # deck[0..2] are the cards Red Dog deals


@pytest.mark.parametrize("broken", [naive_shuffle, sattolo_shuffle])
def test_the_position_test_detects_a_broken_shuffle(
    broken: Callable[[RandomStream, Sequence[Card]], list[Card]],
) -> None:
    shuffles = (
        broken(RandomStream(deck_seed(b"\x01" * 32, i), DECK_LABEL), full_deck())
        for i in range(N_DECKS)
    )
    whole, _ = position_p_values(shuffles)
    assert whole < POWER


# --- uniformity: every permutation of a small deck --------------------------------------


def permutation_p_value(
    shuffle: Callable[[RandomStream, Sequence[int]], list[int]], size: int, per_cell: int
) -> float:
    stream = RandomStream(b"\x02" * 32, f"property/permutations/{size}")
    cells = math.factorial(size)
    counts = Counter(tuple(shuffle(stream, range(size))) for _ in range(cells * per_cell))
    assert set(counts) <= set(permutations(range(size)))
    return uniform_p_value([counts[p] for p in permutations(range(size))])


def fisher_yates(stream: RandomStream, items: Sequence[int]) -> list[int]:
    return stream.shuffled(items)


@pytest.mark.parametrize(("size", "per_cell"), [(3, 2000), (4, 1000), (5, 400)])
def test_every_permutation_of_a_small_deck_is_equally_likely(size: int, per_cell: int) -> None:
    assert permutation_p_value(fisher_yates, size, per_cell) > ALPHA


@pytest.mark.parametrize(("size", "per_cell"), [(3, 2000), (4, 1000)])
def test_the_permutation_test_detects_the_naive_shuffle(size: int, per_cell: int) -> None:
    assert permutation_p_value(naive_shuffle, size, per_cell) < POWER


# --- no modulo bias at awkward bounds ---------------------------------------------------

AWKWARD_BOUNDS = [3, 52, 100, 257, 416]  # 416 = 512 * 0.8125: 19 % of 9-bit draws rejected


def draws_p_value(draw: Callable[[], int], bound: int) -> float:
    count = max(200 * bound, 30_000)
    counts = Counter(draw() for _ in range(count))
    assert set(counts) <= set(range(bound))
    return uniform_p_value([counts[v] for v in range(bound)])


@pytest.mark.parametrize("bound", AWKWARD_BOUNDS)
def test_randbelow_is_uniform_at_awkward_bounds(bound: int) -> None:
    stream = RandomStream(b"\x03" * 32, f"property/randbelow/{bound}")
    assert draws_p_value(lambda: stream.randbelow(bound), bound) > ALPHA


@pytest.mark.parametrize("bound", [52, 100, 416])
def test_a_naive_modulo_of_one_byte_would_be_detected(bound: int) -> None:
    # 256 = 4 * 52 + 48: values below 48 come up 5/256 of the time, the rest 4/256; with
    # 416 the values 256..415 never come up at all.
    stream = RandomStream(b"\x03" * 32, f"property/naive/{bound}")
    assert draws_p_value(lambda: stream.read(1)[0] % bound, bound) < POWER


def test_the_lab_tool_draws_the_same_integers_as_randbelow() -> None:
    seed = b"\x04" * 32
    stream = RandomStream(seed, "lab")
    assert list(unbiased_ints(seed, "lab", 416, 500)) == [stream.randbelow(416) for _ in range(500)]


# --- the lab tool -----------------------------------------------------------------------

MASTER = "ab" * 32


def test_lab_decks_are_the_engine_shuffle_of_hmac_derived_seeds(tmp_path: Path) -> None:
    out = tmp_path / "decks.txt"
    assert (
        main(["decks", "--master-seed", MASTER, "--count", "5", "--start", "3", "-o", str(out)])
        == 0
    )
    lines = out.read_text(encoding="ascii").splitlines()
    master = bytes.fromhex(MASTER)
    expected_seed = hmac.new(
        master, b"croupier-rnglab/deck/v1" + (3).to_bytes(8, "big"), hashlib.sha256
    ).digest()
    assert deck_seed(master, 3) == expected_seed
    assert len(lines) == 5
    for offset, line in enumerate(lines):
        cards = [Card.parse(code) for code in line.split()]
        assert cards == shuffled_deck(deck_seed(master, 3 + offset))
        assert sorted(cards) == sorted(full_deck())


def test_lab_ints_and_ids_go_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ints", "--seed", MASTER, "--label", "L", "--bound", "416", "--count", "4"]) == 0
    out = capsys.readouterr()
    stream = RandomStream(bytes.fromhex(MASTER), "L")
    assert out.out.split() == [str(stream.randbelow(416)) for _ in range(4)]
    assert out.err == ""
    assert main(["decks", "--master-seed", MASTER, "--count", "1", "--format", "ids"]) == 0
    ids = [int(t) for t in capsys.readouterr().out.split()]
    assert sorted(ids) == list(range(52))


def test_lab_raw_bytes_are_the_stream(tmp_path: Path) -> None:
    out = tmp_path / "raw.bin"
    assert main(["raw", "--seed", MASTER, "--label", "L", "--bytes", "100000", "-o", str(out)]) == 0
    assert out.read_bytes() == reference_stream(bytes.fromhex(MASTER), "L", 100_000)


def test_lab_prints_a_generated_master_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decks", "--count", "2"]) == 0
    out = capsys.readouterr()
    master = bytes.fromhex(out.err.strip().removeprefix("master-seed: "))
    first = out.out.splitlines()[0].split()
    assert [Card.parse(c) for c in first] == shuffled_deck(deck_seed(master, 0))


def test_lab_video_poker_decks_are_the_engine_deals() -> None:
    from games.video_poker.engine import deal_cards, double_deck

    master = bytes.fromhex(MASTER)
    deal_deck = next(decks(master, 1, game="video-poker"))
    assert tuple(deal_deck[:5]) == deal_cards(deck_seed(master, 0))
    assert sorted(deal_deck) == sorted(full_deck())
    double = next(decks(master, 1, game="video-poker-double"))
    assert double == double_deck(deck_seed(master, 0), 0)


@pytest.mark.parametrize(
    "argv",
    [
        ["decks", "--count", "1", "--game", "baccarat"],
        ["raw", "--seed", "zz", "--bytes", "3"],
        ["raw", "--seed", "00", "--bytes", "3"],
        ["ints", "--bound", "0", "--count", "3"],
        ["decks", "--count", "-1"],
    ],
)
def test_lab_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


@settings(max_examples=20)
@given(st.integers(min_value=0, max_value=2**32))
def test_lab_deck_seeds_are_distinct_per_index(index: int) -> None:
    master = bytes(32)
    assert deck_seed(master, index) != deck_seed(master, index + 1)
