"""RNG collection tool for a test lab: raw bytes, unbiased integers and shuffled decks,
drawn through the production code path (``RandomStream`` and the engines' own shuffles).

This module is a tool, not rules: unlike the rest of ``games/`` its command line does
file I/O and reads the OS CSPRNG when no seed is given. The generators (``raw_bytes``,
``unbiased_ints``, ``deck_seed``, ``decks``, ``format_deck``) are pure and deterministic;
all I/O lives in ``main`` and its helpers below the ``# --- command line`` marker.

Usage::

    python -m games.rnglab raw   --seed HEX --label L --bytes N -o FILE
    python -m games.rnglab ints  --bound N --count K [--seed HEX] [--label L] [-o FILE]
    python -m games.rnglab decks --count K [--master-seed HEX] [--start I]
                                 [--game red-dog|video-poker|video-poker-double]
                                 [--format codes|ids] [-o FILE]

Without ``-o`` the data goes to stdout; a seed that was generated rather than given is
printed to stderr (``seed: HEX`` / ``master-seed: HEX``) so the lab can reproduce the run.
Deck ``i`` is shuffled from its own seed ``HMAC-SHA256(master, b"croupier-rnglab/deck/v1"
|| i as 8 big-endian bytes)``, exactly as a round is dealt from a fresh 256-bit seed.

>>> [str(c) for c in next(iter(decks(bytes(32), 1)))[:3]] == [
...     str(c) for c in shuffled_deck(deck_seed(bytes(32), 0))[:3]]
True
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO, TextIO

from games.cards import Card, full_deck
from games.red_dog.engine import shuffled_deck
from games.rng import SEED_BYTES, RandomStream

DECK_SEED_DOMAIN = b"croupier-rnglab/deck/v1"
RAW_CHUNK = 1 << 16


def _video_poker_deal_deck(seed: bytes) -> list[Card]:
    # The deck whose first five cards games.video_poker.engine.deal_cards deals (imported
    # here, not at the top, so the lab tool does not load the strategy tables' numpy).
    from games.video_poker.engine import DEAL_LABEL

    return RandomStream(seed, DEAL_LABEL).shuffled(full_deck())


def _video_poker_double_deck(seed: bytes) -> list[Card]:
    from games.video_poker.engine import double_deck

    return double_deck(seed, 0)


# Each game's production shuffle: seed -> the round's full deck, in dealing order.
SHUFFLES: dict[str, Callable[[bytes], list[Card]]] = {
    "red-dog": shuffled_deck,
    "video-poker": _video_poker_deal_deck,
    "video-poker-double": _video_poker_double_deck,
}


def raw_bytes(seed: bytes, label: str, n: int, chunk: int = RAW_CHUNK) -> Iterator[bytes]:
    """The first ``n`` bytes of stream ``label``, in chunks of at most ``chunk`` bytes."""
    if n < 0:
        raise ValueError(f"byte count must be >= 0, got {n}")
    stream = RandomStream(seed, label)
    left = n
    while left > 0:
        take = min(chunk, left)
        yield stream.read(take)
        left -= take


def unbiased_ints(seed: bytes, label: str, bound: int, count: int) -> Iterator[int]:
    """``count`` integers uniform in ``[0, bound)`` from ``RandomStream.randbelow``."""
    if bound <= 0:
        raise ValueError(f"bound must be positive, got {bound}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    stream = RandomStream(seed, label)
    for _ in range(count):
        yield stream.randbelow(bound)


def deck_seed(master: bytes, index: int) -> bytes:
    """The 32-byte seed of deck ``index``: HMAC-SHA256(master, domain || index)."""
    if index < 0:
        raise ValueError(f"deck index must be >= 0, got {index}")
    msg = DECK_SEED_DOMAIN + index.to_bytes(8, "big")
    return hmac.new(master, msg, hashlib.sha256).digest()


def decks(master: bytes, count: int, start: int = 0, game: str = "red-dog") -> Iterator[list[Card]]:
    """Decks ``start .. start + count - 1``, each shuffled by ``game``'s own shuffle."""
    if game not in SHUFFLES:
        raise ValueError(f"unknown game {game!r}; known: {', '.join(sorted(SHUFFLES))}")
    if count < 0 or start < 0:
        raise ValueError("count and start must be >= 0")
    shuffle = SHUFFLES[game]
    for index in range(start, start + count):
        yield shuffle(deck_seed(master, index))


def format_deck(cards: Sequence[Card], fmt: str = "codes") -> str:
    """One deck as a line: card codes (``"Ah 2c ..."``) or integer ids (``"50 0 ..."``)."""
    if fmt == "codes":
        return " ".join(str(c) for c in cards)
    if fmt == "ids":
        return " ".join(str(c.id) for c in cards)
    raise ValueError(f"unknown format {fmt!r} (expected 'codes' or 'ids')")


# --- command line (I/O from here down) --------------------------------------------------


def _seed_arg(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not hex: {text!r}") from None
    if len(seed) != SEED_BYTES:
        raise argparse.ArgumentTypeError(
            f"seed must be {SEED_BYTES} bytes ({2 * SEED_BYTES} hex digits), got {len(seed)}"
        )
    return seed


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m games.rnglab",
        description="Collect RNG output for lab testing through the production code path.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    raw = sub.add_parser("raw", help="raw bytes of one labelled stream")
    raw.add_argument("--seed", type=_seed_arg, help="32-byte seed as hex (default: random)")
    raw.add_argument("--label", default="rnglab/raw", help="stream label")
    raw.add_argument("--bytes", type=_non_negative, required=True, dest="n", help="how many")
    raw.add_argument("-o", "--output", help="output file (default: stdout)")

    ints = sub.add_parser("ints", help="unbiased integers in [0, bound), one per line")
    ints.add_argument("--seed", type=_seed_arg, help="32-byte seed as hex (default: random)")
    ints.add_argument("--label", default="rnglab/ints", help="stream label")
    ints.add_argument("--bound", type=_positive, required=True)
    ints.add_argument("--count", type=_non_negative, required=True)
    ints.add_argument("-o", "--output", help="output file (default: stdout)")

    dk = sub.add_parser("decks", help="shuffled 52-card decks, one per line")
    dk.add_argument("--master-seed", type=_seed_arg, help="32-byte hex (default: random)")
    dk.add_argument("--count", type=_non_negative, required=True)
    dk.add_argument("--start", type=_non_negative, default=0, help="first deck index")
    dk.add_argument("--game", choices=sorted(SHUFFLES), default="red-dog")
    dk.add_argument("--format", choices=("codes", "ids"), default="codes")
    dk.add_argument("-o", "--output", help="output file (default: stdout)")
    return p


def _seed_or_random(given: bytes | None, name: str, err: TextIO) -> bytes:
    if given is not None:
        return given
    seed = os.urandom(SEED_BYTES)
    print(f"{name}: {seed.hex()}", file=err)
    return seed


def _write_raw(chunks: Iterator[bytes], out: BinaryIO) -> None:
    for chunk in chunks:
        out.write(chunk)


def _write_lines(lines: Iterator[str], out: TextIO) -> None:
    for line in lines:
        out.write(line + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    err = sys.stderr
    if args.command == "raw":
        seed = _seed_or_random(args.seed, "seed", err)
        chunks = raw_bytes(seed, args.label, args.n)
        if args.output:
            with open(args.output, "wb") as fb:
                _write_raw(chunks, fb)
        else:
            _write_raw(chunks, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        return 0

    if args.command == "ints":
        seed = _seed_or_random(args.seed, "seed", err)
        lines = (str(v) for v in unbiased_ints(seed, args.label, args.bound, args.count))
    else:
        master = _seed_or_random(args.master_seed, "master-seed", err)
        lines = (
            format_deck(d, args.format) for d in decks(master, args.count, args.start, args.game)
        )
    if args.output:
        with open(args.output, "w", encoding="ascii", newline="\n") as ft:
            _write_lines(lines, ft)
    else:
        _write_lines(lines, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
