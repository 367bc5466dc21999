"""RFC 9162 Merkle hashing: CT reference vectors, then every tree of up to 64 leaves."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.merkle import (
    EMPTY_ROOT,
    HASH_SIZE,
    CompactRange,
    IncrementalTree,
    MerkleError,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "merkle_vectors.json").read_text()
)
REF_LEAVES = [leaf_hash(bytes.fromhex(entry)) for entry in VECTORS["leaves"]]
REF_ROOTS = [bytes.fromhex(r) for r in VECTORS["roots"]]

MAX_SIZE = 64
# As in the CT fuzz tests: entry i is the single byte i.
LEAVES = [leaf_hash(bytes([i])) for i in range(MAX_SIZE)]
WRONG = leaf_hash(b"WrongLeaf")


# An independent, recursive transcription of RFC 9162 §2.1.1, §2.1.3.1 and §2.1.4.1, with
# its own hashing and split, to check the module's iterative versions against.


def _ref_split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _ref_mth(d: Sequence[bytes]) -> bytes:
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return d[0]
    k = _ref_split(len(d))
    return hashlib.sha256(b"\x01" + _ref_mth(d[:k]) + _ref_mth(d[k:])).digest()


def _ref_path(m: int, d: Sequence[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = _ref_split(len(d))
    if m < k:
        return [*_ref_path(m, d[:k]), _ref_mth(d[k:])]
    return [*_ref_path(m - k, d[k:]), _ref_mth(d[:k])]


def _ref_subproof(m: int, d: Sequence[bytes], b: bool) -> list[bytes]:
    if m == len(d):
        return [] if b else [_ref_mth(d)]
    k = _ref_split(len(d))
    if m <= k:
        return [*_ref_subproof(m, d[:k], b), _ref_mth(d[k:])]
    return [*_ref_subproof(m - k, d[k:], False), _ref_mth(d[:k])]


ROOTS = [_ref_mth(LEAVES[:n]) for n in range(MAX_SIZE + 1)]


def _flip(h: bytes, pos: int, bit: int = 0) -> bytes:
    out = bytearray(h)
    out[pos] ^= 1 << bit
    return bytes(out)


def _flip_positions(salt: int) -> tuple[int, ...]:
    # First, last and one rotating byte: every position is hit across the sweep without
    # paying 32 verifications per element (any changed byte changes the SHA-256 input).
    return (0, HASH_SIZE - 1, salt % HASH_SIZE)


def _inclusion_probes(
    leaf: bytes, index: int, size: int, proof: list[bytes], good_root: bytes
) -> list[tuple[str, Callable[[], bool]]]:
    """The corruptions of google/certificate-transparency's VerifierCheck."""

    def v(i: int, n: int, p: Sequence[bytes], r: bytes = good_root, h: bytes = leaf) -> bool:
        return verify_inclusion(h, i, n, p, r)

    probes: list[tuple[str, Callable[[], bool]]] = [
        ("index - 1", lambda: v(index - 1, size, proof)),
        ("index + 1", lambda: v(index + 1, size, proof)),
        ("index ^ 2", lambda: v(index ^ 2, size, proof)),
        ("size * 2", lambda: v(index, size * 2, proof)),
        ("size // 2", lambda: v(index, size // 2, proof)),
        ("wrong leaf", lambda: v(index, size, proof, h=WRONG)),
        ("empty-tree root", lambda: v(index, size, proof, r=EMPTY_ROOT)),
        ("trailing empty bytes", lambda: v(index, size, [*proof, b""])),
        ("trailing root", lambda: v(index, size, [*proof, good_root])),
        ("preceding empty bytes", lambda: v(index, size, [b"", *proof])),
        ("preceding root", lambda: v(index, size, [good_root, *proof])),
    ]
    if proof:
        probes.append(("removed component", lambda: v(index, size, proof[:-1])))
    if len(proof) > 1:
        inserted = [proof[0], WRONG, *proof[1:]]
        probes.append(("inserted component", lambda: v(index, size, inserted)))
    for j in range(len(proof)):
        replaced = [*proof[:j], EMPTY_ROOT, *proof[j + 1 :]]
        probes.append((f"proof[{j}] replaced", partial(v, index, size, replaced)))
    return probes


def _consistency_probes(
    old: int, new: int, root1: bytes, root2: bytes, proof: list[bytes]
) -> list[tuple[str, Callable[[], bool]]]:
    """The corruptions of google/certificate-transparency's VerifierConsistencyCheck."""

    def v(m: int, n: int, p: Sequence[bytes], r1: bytes = root1, r2: bytes = root2) -> bool:
        return verify_consistency(m, n, r1, r2, p)

    probes: list[tuple[str, Callable[[], bool]]] = [
        ("old - 1", lambda: v(old - 1, new, proof)),
        ("old + 1", lambda: v(old + 1, new, proof)),
        ("old ^ 2", lambda: v(old ^ 2, new, proof)),
        ("new * 2", lambda: v(old, new * 2, proof)),
        ("new // 2", lambda: v(old, new // 2, proof)),
        ("wrong old root", lambda: v(old, new, proof, r1=WRONG)),
        ("wrong new root", lambda: v(old, new, proof, r2=WRONG)),
        ("malformed old root", lambda: v(old, new, proof, r1=b"WrongRoot")),
        ("swapped roots", lambda: v(old, new, proof, r1=root2, r2=root1)),
        ("empty proof", lambda: v(old, new, [])),
        ("trailing empty bytes", lambda: v(old, new, [*proof, b""])),
        ("trailing old root", lambda: v(old, new, [*proof, root1])),
        ("trailing new root", lambda: v(old, new, [*proof, root2])),
        ("trailing last component", lambda: v(old, new, [*proof, proof[-1]])),
        ("preceding empty bytes", lambda: v(old, new, [b"", *proof])),
        ("preceding old root", lambda: v(old, new, [root1, *proof])),
        ("preceding new root", lambda: v(old, new, [root2, *proof])),
        ("preceding first component", lambda: v(old, new, [proof[0], *proof])),
        ("truncated", lambda: v(old, new, proof[:-1])),
    ]
    for j in range(len(proof)):
        replaced = [*proof[:j], EMPTY_ROOT, *proof[j + 1 :]]
        probes.append((f"proof[{j}] replaced", partial(v, old, new, replaced)))
    return probes


def _accepted(probes: list[tuple[str, Callable[[], bool]]]) -> list[str]:
    return [name for name, probe in probes if probe()]


# Hashing (§2.1.1)


def test_empty_tree_root_is_sha256_of_the_empty_string() -> None:
    assert EMPTY_ROOT.hex() == VECTORS["empty_root"]
    assert root([]) == EMPTY_ROOT
    assert IncrementalTree().root() == EMPTY_ROOT


def test_leaves_and_nodes_hash_under_distinct_prefixes() -> None:
    a, b = b"a" * 32, b"b" * 32
    assert leaf_hash(b"entry") == hashlib.sha256(b"\x00entry").digest()
    assert node_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()
    # Second-preimage defence: a node is never mistaken for a leaf of its concatenation.
    assert node_hash(a, b) != leaf_hash(a + b)


@pytest.mark.parametrize("size", range(1, 9))
def test_root_matches_the_ct_reference_tree(size: int) -> None:
    assert root(REF_LEAVES[:size]) == REF_ROOTS[size - 1]
    assert IncrementalTree().extend(REF_LEAVES[:size]).root() == REF_ROOTS[size - 1]


def test_root_refuses_unhashed_entries() -> None:
    with pytest.raises(MerkleError):
        root([b"raw entry"])
    with pytest.raises(ValueError):  # MerkleError is a ValueError for callers that care less
        root(["6e340b9c" * 8])  # type: ignore[list-item]  # hex text instead of bytes, on purpose


@pytest.mark.parametrize("size", range(MAX_SIZE + 1))
def test_root_matches_the_recursive_rfc_definition(size: int) -> None:
    assert root(LEAVES[:size]) == ROOTS[size]


# Inclusion proofs (§2.1.3)


@pytest.mark.parametrize(
    "vector", VECTORS["inclusion"], ids=lambda v: f"{v['index']}-of-{v['size']}"
)
def test_inclusion_proof_matches_the_ct_reference_path(vector: dict[str, Any]) -> None:
    index, size = vector["index"], vector["size"]
    expected = [bytes.fromhex(h) for h in vector["proof"]]
    assert inclusion_proof(REF_LEAVES, index, size) == expected
    assert verify_inclusion(REF_LEAVES[index], index, size, expected, REF_ROOTS[size - 1])
    probes = _inclusion_probes(REF_LEAVES[index], index, size, expected, REF_ROOTS[size - 1])
    assert _accepted(probes) == []


@pytest.mark.parametrize(
    "vector", VECTORS["inclusion"], ids=lambda v: f"{v['index']}-of-{v['size']}"
)
def test_inclusion_fails_for_every_flipped_byte_of_a_reference_proof(
    vector: dict[str, Any],
) -> None:
    index, size = vector["index"], vector["size"]
    proof = [bytes.fromhex(h) for h in vector["proof"]]
    leaf, good_root = REF_LEAVES[index], REF_ROOTS[size - 1]
    for pos in range(HASH_SIZE):
        for j in range(len(proof)):
            bad = [*proof[:j], _flip(proof[j], pos), *proof[j + 1 :]]
            assert not verify_inclusion(leaf, index, size, bad, good_root)
        assert not verify_inclusion(_flip(leaf, pos), index, size, proof, good_root)
        assert not verify_inclusion(leaf, index, size, proof, _flip(good_root, pos))


@pytest.mark.parametrize("size", range(1, MAX_SIZE + 1))
def test_every_inclusion_proof_verifies_and_no_corruption_does(size: int) -> None:
    good_root = ROOTS[size]
    for index in range(size):
        leaf = LEAVES[index]
        proof = inclusion_proof(LEAVES, index, size)
        assert proof == _ref_path(index, LEAVES[:size])
        assert verify_inclusion(leaf, index, size, proof, good_root)
        for pos in _flip_positions(index + size):
            for j in range(len(proof)):
                bad = [*proof[:j], _flip(proof[j], pos), *proof[j + 1 :]]
                assert not verify_inclusion(leaf, index, size, bad, good_root), (index, j, pos)
            assert not verify_inclusion(_flip(leaf, pos), index, size, proof, good_root)
            assert not verify_inclusion(leaf, index, size, proof, _flip(good_root, pos))
        assert _accepted(_inclusion_probes(leaf, index, size, proof, good_root)) == [], index


def test_inclusion_proof_for_a_leaf_outside_the_tree_is_refused() -> None:
    with pytest.raises(MerkleError):
        inclusion_proof(LEAVES, 8, 8)
    with pytest.raises(MerkleError):
        inclusion_proof(LEAVES, -1, 8)
    with pytest.raises(MerkleError):
        inclusion_proof(LEAVES, 0, 0)
    with pytest.raises(MerkleError):
        inclusion_proof(LEAVES[:4], 0, 5)


def test_inclusion_in_an_impossible_tree_never_verifies() -> None:
    for index, size in ((0, 0), (1, 0), (1, 1), (2, 1), (-1, 1), (0, -1)):
        assert not verify_inclusion(LEAVES[0], index, size, [], LEAVES[0])
        assert not verify_inclusion(LEAVES[0], index, size, [], EMPTY_ROOT)


def test_inclusion_in_a_one_leaf_tree_needs_the_leaf_to_be_the_root() -> None:
    assert inclusion_proof(LEAVES, 0, 1) == []
    assert verify_inclusion(LEAVES[0], 0, 1, [], LEAVES[0])
    assert not verify_inclusion(LEAVES[0], 0, 1, [], LEAVES[1])
    assert not verify_inclusion(b"", 0, 1, [], b"")


def test_malformed_hashes_never_prove_inclusion() -> None:
    proof = inclusion_proof(LEAVES, 3, 8)
    assert not verify_inclusion(LEAVES[3][:31], 3, 8, proof, ROOTS[8])
    assert not verify_inclusion(LEAVES[3], 3, 8, proof, ROOTS[8] + b"\x00")
    hex_text = [*proof[:2], proof[2].hex()]
    assert not verify_inclusion(LEAVES[3], 3, 8, hex_text, ROOTS[8])  # type: ignore[arg-type]  # str on purpose


# Consistency proofs (§2.1.4)


@pytest.mark.parametrize(
    "vector", VECTORS["consistency"], ids=lambda v: f"{v['old_size']}-to-{v['new_size']}"
)
def test_consistency_proof_matches_the_ct_reference_proof(vector: dict[str, Any]) -> None:
    old, new = vector["old_size"], vector["new_size"]
    expected = [bytes.fromhex(h) for h in vector["proof"]]
    root1, root2 = REF_ROOTS[old - 1], REF_ROOTS[new - 1]
    assert consistency_proof(REF_LEAVES, old, new) == expected
    assert verify_consistency(old, new, root1, root2, expected)
    if expected:
        assert _accepted(_consistency_probes(old, new, root1, root2, expected)) == []


@pytest.mark.parametrize(
    "vector", VECTORS["consistency"], ids=lambda v: f"{v['old_size']}-to-{v['new_size']}"
)
def test_consistency_fails_for_every_flipped_byte_of_a_reference_proof(
    vector: dict[str, Any],
) -> None:
    old, new = vector["old_size"], vector["new_size"]
    proof = [bytes.fromhex(h) for h in vector["proof"]]
    root1, root2 = REF_ROOTS[old - 1], REF_ROOTS[new - 1]
    for pos in range(HASH_SIZE):
        for j in range(len(proof)):
            bad = [*proof[:j], _flip(proof[j], pos), *proof[j + 1 :]]
            assert not verify_consistency(old, new, root1, root2, bad)
        assert not verify_consistency(old, new, _flip(root1, pos), root2, proof)
        assert not verify_consistency(old, new, root1, _flip(root2, pos), proof)


@pytest.mark.parametrize("new", range(1, MAX_SIZE + 1))
def test_every_consistency_proof_verifies_and_no_corruption_does(new: int) -> None:
    root2 = ROOTS[new]
    for old in range(new + 1):
        root1 = ROOTS[old]
        proof = consistency_proof(LEAVES, old, new)
        expected = [] if old == 0 else _ref_subproof(old, LEAVES[:new], True)
        assert proof == expected, old
        assert verify_consistency(old, new, root1, root2, proof), old
        for pos in _flip_positions(old + new):
            for j in range(len(proof)):
                bad = [*proof[:j], _flip(proof[j], pos), *proof[j + 1 :]]
                assert not verify_consistency(old, new, root1, root2, bad), (old, j, pos)
            assert not verify_consistency(old, new, _flip(root1, pos), root2, proof), old
            if old != 0:  # any new root extends the empty tree
                assert not verify_consistency(old, new, root1, _flip(root2, pos), proof), old
        if proof:
            assert _accepted(_consistency_probes(old, new, root1, root2, proof)) == [], old


def test_a_tree_is_consistent_with_itself_only_by_an_empty_proof() -> None:
    assert consistency_proof(LEAVES, 5, 5) == []
    assert verify_consistency(5, 5, ROOTS[5], ROOTS[5], [])
    assert not verify_consistency(5, 5, ROOTS[5], ROOTS[6], [])
    assert not verify_consistency(5, 5, ROOTS[5], ROOTS[5], [ROOTS[5]])


def test_every_tree_extends_the_empty_tree() -> None:
    assert consistency_proof(LEAVES, 0, 7) == []
    assert consistency_proof(LEAVES, 0, 0) == []
    assert verify_consistency(0, 7, EMPTY_ROOT, ROOTS[7], [])
    assert verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])


def test_a_size_zero_tree_head_must_carry_the_empty_tree_root() -> None:
    assert not verify_consistency(0, 7, ROOTS[7], ROOTS[7], [])
    assert not verify_consistency(0, 0, ROOTS[1], ROOTS[1], [])
    assert not verify_consistency(0, 0, EMPTY_ROOT, ROOTS[1], [])
    assert not verify_consistency(0, 7, EMPTY_ROOT, ROOTS[7], [EMPTY_ROOT])


def test_a_log_that_shrank_is_never_consistent() -> None:
    proof = consistency_proof(LEAVES, 3, 7)
    assert not verify_consistency(7, 3, ROOTS[7], ROOTS[3], proof)
    assert not verify_consistency(1, 0, ROOTS[1], EMPTY_ROOT, [])
    assert not verify_consistency(-1, 3, ROOTS[1], ROOTS[3], proof)
    with pytest.raises(MerkleError):
        consistency_proof(LEAVES, 7, 3)
    with pytest.raises(MerkleError):
        consistency_proof(LEAVES, -1, 3)


def test_consistency_proof_beyond_the_known_leaves_is_refused() -> None:
    with pytest.raises(MerkleError):
        consistency_proof(LEAVES[:8], 3, 9)


def test_a_growing_log_needs_a_non_empty_proof() -> None:
    assert not verify_consistency(1, 2, ROOTS[1], ROOTS[2], [])


def test_malformed_hashes_never_prove_consistency() -> None:
    proof = consistency_proof(LEAVES, 3, 7)
    assert not verify_consistency(3, 7, ROOTS[3][:31], ROOTS[7], proof)
    assert not verify_consistency(3, 7, ROOTS[3], ROOTS[7], [*proof, b""])
    assert not verify_consistency(0, 7, EMPTY_ROOT, b"", [])


# Incremental tree (the sealer's O(log n) state)


def test_incremental_root_equals_the_batch_root_at_every_size() -> None:
    leaves = [leaf_hash(i.to_bytes(2, "big")) for i in range(300)]
    tree = IncrementalTree()
    for n, h in enumerate(leaves, start=1):
        tree = tree.append(h)
        assert tree.size == n
        assert tree.root() == root(leaves[:n]), n
        assert len(tree.subtree_roots) == n.bit_count()


def test_extending_at_once_equals_appending_one_by_one() -> None:
    one_by_one = IncrementalTree()
    for h in LEAVES:
        one_by_one = one_by_one.append(h)
    assert IncrementalTree().extend(LEAVES) == one_by_one
    assert IncrementalTree().extend(LEAVES[:20]).extend(LEAVES[20:]) == one_by_one


@pytest.mark.parametrize("size", range(MAX_SIZE + 1))
def test_a_sealer_resumes_from_size_and_hex_subtree_roots(size: int) -> None:
    saved = IncrementalTree().extend(LEAVES[:size])
    stored = json.dumps({"size": saved.size, "subtree_roots": saved.to_hex()})
    loaded = json.loads(stored)
    resumed = IncrementalTree.from_hex(loaded["size"], loaded["subtree_roots"])
    assert resumed == saved
    assert resumed.root() == ROOTS[size]
    assert resumed.extend(LEAVES[size:]).root() == ROOTS[MAX_SIZE]


@pytest.mark.parametrize(
    ("size", "subtree_roots"),
    [
        (-1, []),
        (3, [LEAVES[0].hex()]),  # 3 = 0b11 needs two subtree roots
        (1, [LEAVES[0].hex(), LEAVES[1].hex()]),
        (1, ["zz" * 32]),
        (1, [LEAVES[0].hex()[:-2]]),
        (0, [LEAVES[0].hex()]),
    ],
)
def test_a_saved_state_that_does_not_fit_its_size_is_refused(
    size: int, subtree_roots: list[str]
) -> None:
    with pytest.raises(MerkleError):
        IncrementalTree.from_hex(size, subtree_roots)


def test_incremental_tree_refuses_unhashed_entries() -> None:
    with pytest.raises(MerkleError):
        IncrementalTree().append(b"raw entry")


def test_compact_range_is_the_incremental_tree() -> None:
    assert CompactRange is IncrementalTree


# Properties


@given(
    entries=st.lists(st.binary(max_size=8), min_size=1, max_size=200),
    data=st.data(),
)
def test_proofs_over_arbitrary_logs_verify_and_match_the_rfc(
    entries: list[bytes], data: st.DataObject
) -> None:
    leaves = [leaf_hash(e) for e in entries]
    new = data.draw(st.integers(1, len(leaves)), label="new")
    old = data.draw(st.integers(0, new), label="old")
    index = data.draw(st.integers(0, new - 1), label="index")
    new_root = root(leaves[:new])
    assert new_root == _ref_mth(leaves[:new])
    assert IncrementalTree().extend(leaves[:new]).root() == new_root

    path = inclusion_proof(leaves, index, new)
    assert path == _ref_path(index, leaves[:new])
    assert verify_inclusion(leaves[index], index, new, path, new_root)

    proof = consistency_proof(leaves, old, new)
    assert verify_consistency(old, new, root(leaves[:old]), new_root, proof)


@given(
    size=st.integers(2, 200),
    data=st.data(),
)
def test_any_flipped_bit_in_a_proof_defeats_it(size: int, data: st.DataObject) -> None:
    leaves = [leaf_hash(i.to_bytes(2, "big")) for i in range(size)]
    new_root = root(leaves)
    pos = data.draw(st.integers(0, HASH_SIZE - 1), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")

    index = data.draw(st.integers(0, size - 1), label="index")
    path = inclusion_proof(leaves, index, size)
    j = data.draw(st.integers(0, len(path) - 1), label="path element")
    path[j] = _flip(path[j], pos, bit)
    assert not verify_inclusion(leaves[index], index, size, path, new_root)

    old = data.draw(st.integers(1, size - 1), label="old")
    proof = consistency_proof(leaves, old, size)
    k = data.draw(st.integers(0, len(proof) - 1), label="proof element")
    proof[k] = _flip(proof[k], pos, bit)
    assert not verify_consistency(old, size, root(leaves[:old]), new_root, proof)
