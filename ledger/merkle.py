"""RFC 9162 (Certificate Transparency v2) Merkle tree hashes, incremental trees and proofs.

Standard library only and free of project imports, so auditors' tooling can vendor this
one file to verify a log offline. Sections cited are those of RFC 9162:

- §2.1.1 Merkle Tree Hash (MTH): ``leaf_hash``, ``node_hash``, ``EMPTY_ROOT``, ``root``.
- §2.1.3.1 / §2.1.3.2 inclusion proofs (PATH): ``inclusion_proof``, ``verify_inclusion``,
  ``inclusion_root``, and every leaf's at once: ``all_inclusion_proofs``.
- §2.1.4.1 / §2.1.4.2 consistency proofs (SUBPROOF): ``consistency_proof``,
  ``verify_consistency``.
- ``IncrementalTree``: the roots of the perfect subtrees a sealer needs to keep (O(log n)
  hashes) to extend the tree one leaf at a time and give its MTH at any size.

Functions that *build* hashes or proofs raise ``MerkleError`` for impossible arguments
(an index outside the tree, an old size above the new one): that is a caller's bug.
Functions that *verify* return ``False`` for anything that does not prove the claim,
bad sizes and malformed hashes included, because their inputs come from the log under
audit and may be hostile.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "CompactRange",
    "IncrementalTree",
    "MerkleError",
    "all_inclusion_proofs",
    "consistency_proof",
    "inclusion_proof",
    "inclusion_root",
    "leaf_hash",
    "node_hash",
    "root",
    "subtree_levels",
    "verify_consistency",
    "verify_inclusion",
]

# SHA-256 output length; every leaf hash, node hash, root and proof element has it.
HASH_SIZE = 32

_sha256 = hashlib.sha256
_LEAF_PREFIX = b"\x00"  # §2.1.1: MTH({d(0)}) = HASH(0x00 || d(0))
_NODE_PREFIX = b"\x01"  # §2.1.1: MTH(D[n]) = HASH(0x01 || MTH(D[0:k]) || MTH(D[k:n]))

# §2.1.1: the hash of an empty list is the hash of the empty string.
EMPTY_ROOT: bytes = _sha256(b"").digest()


class MerkleError(ValueError):
    """Raised for arguments no tree can satisfy: sizes, indices or hashes out of range."""


def leaf_hash(entry: bytes) -> bytes:
    """§2.1.1: the hash of one log entry, ``SHA-256(0x00 || entry)``.

    >>> leaf_hash(b"").hex()
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d'
    """
    return _sha256(_LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """§2.1.1: the hash of an interior node, ``SHA-256(0x01 || left || right)``."""
    return _sha256(_NODE_PREFIX + left + right).digest()


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """§2.1.1: the Merkle Tree Hash over already-hashed leaves.

    Raises ``MerkleError`` if any leaf hash is not ``HASH_SIZE`` bytes (a raw entry passed
    by mistake would otherwise give a wrong root silently).
    """
    _check_leaf_hashes(leaf_hashes)
    return _mth(leaf_hashes)


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int, size: int) -> list[bytes]:
    """§2.1.3.1: PATH(index, D[0:size]), the audit path for one leaf, nearest sibling first.

    ``leaf_hashes`` may hold more than ``size`` leaves; only the first ``size`` are used.
    Raises ``MerkleError`` unless ``0 <= index < size <= len(leaf_hashes)``.
    """
    if not 0 < size <= len(leaf_hashes):
        raise MerkleError(f"tree size {size} outside 1..{len(leaf_hashes)}")
    if not 0 <= index < size:
        raise MerkleError(f"leaf index {index} outside 0..{size - 1}")
    _check_leaf_hashes(leaf_hashes[:size])
    return _inclusion_path(lambda lo, hi: _mth(leaf_hashes[lo:hi]), index, size)


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """§2.1.3.2: whether ``proof`` shows leaf ``index`` of a ``size``-leaf tree is ``leaf_hash``."""
    if not _all_hashes((root,)):
        return False
    return inclusion_root(leaf_hash, index, size, proof) == root


def inclusion_root(leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes | None:
    """§2.1.3.2 without the comparison: the root that ``proof`` leads to from leaf ``index``
    of a ``size``-leaf tree, or None when the proof cannot be a path of such a tree (a
    signed root is then checked against it: a batch of the log, ``ledger.envelope``)."""
    if type(index) is not int or type(size) is not int or not 0 <= index < size:
        return None
    if not _all_hashes((leaf_hash, *proof)):
        return None
    fn, sn = index, size - 1
    r = leaf_hash
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            # The right edge of a non-perfect tree: climb past levels where this node has
            # no sibling, since the RFC tree promotes it unchanged.
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def all_inclusion_proofs(leaf_hashes: Sequence[bytes]) -> tuple[bytes, list[list[bytes]]]:
    """The root of a tree over these leaf hashes and §2.1.3.1's PATH of every leaf, the
    tree's levels built once (each path is a walk up them: no hash beyond the tree's own
    ``n - 1``). Raises ``MerkleError`` for no leaves or a leaf that is not a hash."""
    if not leaf_hashes:
        raise MerkleError("a tree of no leaves has no paths")
    _check_leaf_hashes(leaf_hashes)
    levels: list[Sequence[bytes]] = [leaf_hashes]
    level = leaf_hashes
    while len(level) > 1:
        n = len(level)
        nxt = [
            _sha256(_NODE_PREFIX + left + right).digest()
            for left, right in zip(level[0 : n - 1 : 2], level[1:n:2], strict=True)
        ]
        if n & 1:
            nxt.append(level[-1])  # promoted unchanged: no sibling, no path element
        levels.append(nxt)
        level = nxt
    paths: list[list[bytes]] = []
    for index in range(len(leaf_hashes)):
        path: list[bytes] = []
        i = index
        for lv in levels[:-1]:
            sibling = i ^ 1
            if sibling < len(lv):
                path.append(lv[sibling])
            i >>= 1
        paths.append(path)
    return level[0], paths


def consistency_proof(leaf_hashes: Sequence[bytes], old_size: int, new_size: int) -> list[bytes]:
    """§2.1.4.1: PROOF(old_size, D[0:new_size]) = SUBPROOF(old_size, D[0:new_size], true).

    Empty when ``old_size == new_size`` (§2.1.4.1: SUBPROOF(m, D[m], true) = {}) and when
    ``old_size == 0`` (every tree extends the empty tree; nothing to prove).
    Raises ``MerkleError`` unless ``0 <= old_size <= new_size <= len(leaf_hashes)``.
    """
    if not 0 <= new_size <= len(leaf_hashes):
        raise MerkleError(f"new tree size {new_size} outside 0..{len(leaf_hashes)}")
    if not 0 <= old_size <= new_size:
        raise MerkleError(f"old tree size {old_size} outside 0..{new_size}")
    _check_leaf_hashes(leaf_hashes[:new_size])
    return _consistency_path(lambda lo, hi: _mth(leaf_hashes[lo:hi]), old_size, new_size)


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """§2.1.4.2: whether ``proof`` shows the ``new_size`` tree extends the ``old_size`` one.

    Edge cases (§2.1.4.2 covers only ``0 < old_size < new_size``):

    - ``old_size == new_size``: true iff the proof is empty and the roots are equal.
    - ``old_size == 0``: true iff the proof is empty and ``old_root`` is ``EMPTY_ROOT``.
      Any tree extends the empty one, so ``new_root`` is unconstrained (beyond being a
      well-formed hash); but a size-0 tree head whose root is not the empty-tree hash is
      not a genuine tree head, so it is refused rather than ignored.
    - ``old_size > new_size`` or a negative size: false.
    """
    if not 0 <= old_size <= new_size:
        return False
    if not _all_hashes((old_root, new_root, *proof)):
        return False
    if old_size == 0:
        return not proof and old_root == EMPTY_ROOT and (new_size > 0 or new_root == old_root)
    if old_size == new_size:
        return not proof and old_root == new_root
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        # The old tree is perfect, so its root is a node of the new tree and the proof
        # omits it (§2.1.4.1, b = true when m == n).
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


@dataclass(frozen=True, slots=True)
class IncrementalTree:
    """A Merkle tree known only by the roots of its perfect subtrees, left (largest) first.

    A tree of ``size`` leaves splits into one perfect subtree per set bit of ``size``
    (§2.1.1 always splits at a power of two), so ``size.bit_count()`` hashes are enough to
    append further leaves and to give the MTH of the whole tree.

    >>> t = IncrementalTree().append(leaf_hash(b"")).append(leaf_hash(b"\\x00"))
    >>> t.size, t.root() == root([leaf_hash(b""), leaf_hash(b"\\x00")])
    (2, True)
    >>> IncrementalTree.from_hex(t.size, t.to_hex()) == t
    True
    """

    size: int = 0
    subtree_roots: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        if self.size < 0:
            raise MerkleError(f"tree size {self.size} is negative")
        if len(self.subtree_roots) != self.size.bit_count():
            raise MerkleError(
                f"a tree of {self.size} leaves has {self.size.bit_count()} perfect "
                f"subtrees, not {len(self.subtree_roots)}"
            )
        if not _all_hashes(self.subtree_roots):
            raise MerkleError(f"subtree roots must be {HASH_SIZE}-byte hashes")

    def append(self, leaf_hash: bytes) -> IncrementalTree:
        """The tree with one more leaf."""
        return self.extend((leaf_hash,))

    def extend(self, leaf_hashes: Iterable[bytes]) -> IncrementalTree:
        """The tree with these leaves appended in order."""
        stack = list(self.subtree_roots)
        size = self.size
        for h in leaf_hashes:
            if not isinstance(h, bytes) or len(h) != HASH_SIZE:
                raise MerkleError(f"leaf hash must be {HASH_SIZE} bytes")
            # Binary increment: each trailing 1-bit of size is a perfect subtree of the
            # same height as the carry, so they merge into one a level higher.
            n = size
            while n & 1:
                h = node_hash(stack.pop(), h)
                n >>= 1
            stack.append(h)
            size += 1
        return IncrementalTree(size, tuple(stack))

    def root(self) -> bytes:
        """§2.1.1: the MTH of all leaves so far; ``EMPTY_ROOT`` for no leaves."""
        if not self.subtree_roots:
            return EMPTY_ROOT
        # MTH splits off the largest perfect subtree on the left, so fold from the right.
        r = self.subtree_roots[-1]
        for left in reversed(self.subtree_roots[:-1]):
            r = node_hash(left, r)
        return r

    def to_hex(self) -> list[str]:
        """The subtree roots as lowercase hex, left first; store with ``size`` to resume."""
        return [h.hex() for h in self.subtree_roots]

    @classmethod
    def from_hex(cls, size: int, subtree_roots: Sequence[str]) -> IncrementalTree:
        """Rebuild a tree saved with ``to_hex``; ``MerkleError`` if the two do not fit."""
        try:
            hashes = tuple(bytes.fromhex(h) for h in subtree_roots)
        except (TypeError, ValueError) as exc:
            raise MerkleError(f"subtree roots must be hex strings: {exc}") from exc
        return cls(size, hashes)


# The same structure under the name transparency-dev/merkle gives it: a range [0, size).
CompactRange = IncrementalTree


RangeHash = Callable[[int, int], bytes]


def _inclusion_path(mth: RangeHash, index: int, size: int) -> list[bytes]:
    # PATH(m, D[lo:hi]) recurses into one half and appends the other half's MTH; walking
    # down from the root collects those siblings top-first, so reverse at the end.
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append(mth(lo + k, hi))
            hi = lo + k
        else:
            path.append(mth(lo, lo + k))
            lo += k
    path.reverse()
    return path


def _consistency_path(mth: RangeHash, old_size: int, new_size: int) -> list[bytes]:
    proof: list[bytes] = []
    if old_size in (0, new_size):
        return proof
    # SUBPROOF(m, D[lo:hi], b), unrolled: each step descends into one half and records
    # the other half's MTH; b turns false once the old tree's root is no longer a node
    # of the current subtree, so the final subtree's own hash must then be recorded.
    m, lo, hi, old_root_is_here = old_size, 0, new_size, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            proof.append(mth(lo + k, hi))
            hi = lo + k
        else:
            proof.append(mth(lo, lo + k))
            lo += k
            m -= k
            old_root_is_here = False
    if not old_root_is_here:
        proof.append(mth(lo, hi))
    proof.reverse()
    return proof


class LeafTable:
    """All perfect-subtree hashes of a log, so any MTH the RFC algorithms ask for costs
    O(log n): the auditor checks many checkpoints and proofs over one pass of hashing.

    >>> leaves = [leaf_hash(bytes([i])) for i in range(7)]
    >>> t = LeafTable(leaves)
    >>> t.root(5) == root(leaves[:5]), t.consistency_proof(3, 7) == consistency_proof(leaves, 3, 7)
    (True, True)
    """

    def __init__(
        self,
        leaf_hashes: Sequence[bytes],
        blocks: Sequence[tuple[int, Sequence[bytes]]] = (),
    ) -> None:
        """``blocks``: hashes already computed, as (position of a block's first leaf, the
        block's ``subtree_levels``), e.g. by the processes that hashed the leaves. Level
        ``j`` of a block is used where the block is aligned to ``2^j`` leaves (its nodes
        are then this table's); every other node is hashed here. A block's levels must
        be those of the table's own leaves at its position (the caller's business)."""
        _check_leaf_hashes(leaf_hashes)
        self.levels: list[list[bytes]] = [list(leaf_hashes)]
        j = 0
        while len(self.levels[-1]) > 1:
            below = self.levels[-1]
            j += 1
            count = len(below) // 2
            level: list[bytes | None] = [None] * count
            for start, levels in blocks:
                if j > len(levels) or start % (1 << j):
                    continue
                blob, first = levels[j - 1], start >> j
                k = min(len(blob) // HASH_SIZE, count - first)
                if k <= 0:
                    continue
                level[first : first + k] = [
                    blob[i : i + HASH_SIZE] for i in range(0, k * HASH_SIZE, HASH_SIZE)
                ]
            self.levels.append(
                [
                    node_hash(below[2 * i], below[2 * i + 1]) if h is None else h
                    for i, h in enumerate(level)
                ]
            )

    @property
    def size(self) -> int:
        return len(self.levels[0])

    def range_hash(self, lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]); O(log n) when ``lo`` is aligned as in every RFC 9162 recursion."""
        if hi <= lo:
            return EMPTY_ROOT
        pieces: list[bytes] = []
        start, n = lo, hi - lo
        while n:
            level = n.bit_length() - 1
            width = 1 << level
            if start % width:
                return _mth(self.levels[0][lo:hi])  # unaligned: hash the leaves
            pieces.append(self.levels[level][start >> level])
            start, n = start + width, n - width
        r = pieces[-1]
        for left in reversed(pieces[:-1]):
            r = node_hash(left, r)
        return r

    def root(self, size: int) -> bytes:
        if not 0 <= size <= self.size:
            raise MerkleError(f"tree size {size} outside 0..{self.size}")
        return self.range_hash(0, size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        if not 0 < size <= self.size or not 0 <= index < size:
            raise MerkleError(f"leaf {index} of a {size}-leaf tree is outside 0..{self.size}")
        return _inclusion_path(self.range_hash, index, size)

    def consistency_proof(self, old_size: int, new_size: int) -> list[bytes]:
        if not 0 <= old_size <= new_size <= self.size:
            raise MerkleError(f"sizes {old_size} <= {new_size} <= {self.size} do not hold")
        return _consistency_path(self.range_hash, old_size, new_size)


def subtree_levels(leaf_hashes: Sequence[bytes]) -> list[bytes]:
    """The nodes a ``LeafTable`` over these leaves holds above them, level by level from
    the pairs up, each level as one string of hashes (``LeafTable``'s ``blocks``)."""
    out: list[bytes] = []
    below = list(leaf_hashes)
    while len(below) > 1:
        n = len(below) - len(below) % 2  # an odd last node has no pair at this level
        below = [
            _sha256(_NODE_PREFIX + a + b).digest()
            for a, b in zip(below[0:n:2], below[1:n:2], strict=True)
        ]
        out.append(b"".join(below))
    return out


def _split(n: int) -> int:
    """§2.1.1: the largest power of two smaller than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def _mth(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH of checked leaf hashes, level by level with no recursion.

    Pairing neighbours and carrying an odd last node up unchanged builds the same tree as
    §2.1.1's split at the largest power of two: every left subtree comes out perfect and
    only the right edge is ragged.
    """
    n = len(leaf_hashes)
    if n == 0:
        return EMPTY_ROOT
    level = leaf_hashes
    while n > 1:
        odd = level[-1] if n & 1 else None
        nxt = [
            _sha256(_NODE_PREFIX + left + right).digest()
            for left, right in zip(level[0 : n - 1 : 2], level[1:n:2], strict=True)
        ]
        if odd is not None:
            nxt.append(odd)
        level = nxt
        n = len(level)
    return level[0]


def _all_hashes(values: Sequence[bytes]) -> bool:
    # Types are checked at run time too: callers may hand in str or hex by mistake.
    # set(map(...)) rather than a generator: about 4x faster over a million leaves.
    return set(map(type, values)) <= {bytes} and set(map(len, values)) <= {HASH_SIZE}


def _check_leaf_hashes(leaf_hashes: Sequence[bytes]) -> None:
    if not _all_hashes(leaf_hashes):
        raise MerkleError(f"leaf hashes must be {HASH_SIZE} bytes each")
