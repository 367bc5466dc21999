"""LeafTable gives the same roots and proofs as the plain RFC 9162 functions."""

from __future__ import annotations

from ledger.merkle import (
    LeafTable,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
    subtree_levels,
)

LEAVES = [leaf_hash(i.to_bytes(2, "big")) for i in range(70)]
TABLE = LeafTable(LEAVES)


def test_table_roots_equal_batch_roots_at_every_size() -> None:
    for size in range(len(LEAVES) + 1):
        assert TABLE.root(size) == root(LEAVES[:size])


def test_table_inclusion_proofs_equal_the_rfc_paths() -> None:
    for size in range(1, 40):
        for index in range(size):
            assert TABLE.inclusion_proof(index, size) == inclusion_proof(LEAVES, index, size)


def test_table_consistency_proofs_equal_the_rfc_subproofs() -> None:
    for new in range(1, 40):
        for old in range(new + 1):
            assert TABLE.consistency_proof(old, new) == consistency_proof(LEAVES, old, new)


def test_unaligned_ranges_fall_back_to_hashing_the_leaves() -> None:
    assert TABLE.range_hash(3, 10) == root(LEAVES[3:10])


def _blocks(leaves: list[bytes], sizes: list[int]) -> list[tuple[int, list[bytes]]]:
    out, start = [], 0
    for size in sizes:
        if start >= len(leaves):
            break
        out.append((start, subtree_levels(leaves[start : start + size])))
        start += size
    return out


def test_a_table_from_hashed_blocks_equals_the_table_hashed_here() -> None:
    # verify's workers hash their chunk's nodes; the parent's table must be the same,
    # whatever the chunks: powers of two or not, aligned or not, some not hashed at all.
    import random

    rnd = random.Random(14)
    for n in (0, 1, 2, 3, 5, 8, 31, 64, 100, 257, 1000, 2049):
        leaves = [leaf_hash(rnd.randbytes(8)) for _ in range(n)]
        plain = LeafTable(leaves)
        for sizes in ([1], [2], [3], [4], [7], [8], [16], [2000], [2048], [1024, 3, 1021]):
            blocks = _blocks(leaves, sizes * (n // min(sizes) + 1))
            assert LeafTable(leaves, blocks).levels == plain.levels, (n, sizes)
            assert LeafTable(leaves, blocks[::2]).levels == plain.levels, (n, sizes)
        for _ in range(5):
            sizes = [rnd.choice([1, 2, 3, 4, 5, 8, 13, 16, 64, 100]) for _ in range(n + 1)]
            table = LeafTable(leaves, _blocks(leaves, sizes))
            assert table.levels == plain.levels, (n, sizes)
            for size in range(0, n + 1, max(1, n // 17)):
                assert table.root(size) == root(leaves[:size])


def test_subtree_levels_are_the_nodes_of_the_table_above_the_leaves() -> None:
    for n in (1, 2, 3, 6, 8, 70):
        levels = LeafTable(LEAVES[:n]).levels[1:]
        assert subtree_levels(LEAVES[:n]) == [b"".join(level) for level in levels]


def test_blocks_that_are_not_the_tables_leaves_change_its_roots() -> None:
    # The blocks are trusted to be the leaves' own (the caller's business): this test
    # only shows they are really used, so the equality above means something.
    other = [leaf_hash(b"x" + h) for h in LEAVES[:8]]
    table = LeafTable(LEAVES[:8], [(0, subtree_levels(other))])
    assert table.root(8) == root(other) != root(LEAVES[:8])
