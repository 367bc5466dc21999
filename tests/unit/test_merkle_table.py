"""LeafTable gives the same roots and proofs as the plain RFC 9162 functions."""

from __future__ import annotations

from ledger.merkle import LeafTable, consistency_proof, inclusion_proof, leaf_hash, root

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
