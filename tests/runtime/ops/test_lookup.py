"""EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION and its FarmHash."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, OpFailedError
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime.ops._farmhash import fingerprint64

from ._single_op import F16, F32, I32, INT, Q8, const, feed, out, run, run1

VALUES = np.arange(12, dtype=np.float32).reshape(3, 2, 2)


def test_embedding_lookup_selects_rows():
    y = run1(Op.EMBEDDING_LOOKUP, [feed(I32, [2, 0, 2]), feed(F32, VALUES)], out(F32, (3, 2, 2)))
    np.testing.assert_array_equal(y, VALUES[[2, 0, 2]])


def test_embedding_lookup_out_of_range_names_the_lookups():
    with pytest.raises(OpFailedError, match=r"input 0 \(lookups\) value -1 at \[1\] is out of"
                                            r" range \[0, 3\)"):
        run1(Op.EMBEDDING_LOOKUP, [feed(I32, [0, -1]), feed(F32, VALUES)], out(F32, (2, 2, 2)))


def test_hashtable_lookup_hits_and_misses():
    values = np.arange(6, dtype=np.uint8).reshape(3, 2) + 10
    output, hits = run(Op.HASHTABLE_LOOKUP,
                       [feed(I32, [7, -5, 100, 3]), feed(I32, [-5, 3, 7]),
                        feed(Q8, values, scale=0.5, zero_point=1)],
                       [out(Q8, (4, 2), scale=0.5, zero_point=1), out(Q8, (4,), scale=1.0)])
    assert hits.tolist() == [1, 1, 0, 1]
    assert output.tolist() == [[14, 15], [10, 11], [0, 0], [12, 13]]


def test_hashtable_lookup_needs_sorted_keys():
    with pytest.raises(OpFailedError, match=r"input 1 \(keys\) must be sorted"):
        run(Op.HASHTABLE_LOOKUP, [feed(I32, [1]), feed(I32, [3, 1]), feed(F32, VALUES[:2])],
            [out(F32, (1, 2, 2)), out(Q8, (1,), scale=1.0)])


def test_hashtable_hits_output_must_be_scale_1_zero_point_0():
    with pytest.raises(BadDataError, match="hits must have scale 1 and zero point 0"):
        run(Op.HASHTABLE_LOOKUP, [feed(I32, [1]), feed(I32, [1, 3]), feed(F32, VALUES[:2])],
            [out(F32, (1, 2, 2)), out(Q8, (1,), scale=0.5)])


# ------------------------------------------------------------------ FarmHash

# Fingerprint64 of the first n bytes of ((i * 131 + 7) ^ (i >> 3)) & 255, from the reference
# FarmHash library; the lengths cover each branch of the algorithm.
REFERENCE = {0: 11160318154034397263, 1: 6305636504242451570, 4: 8711584101399146599,
             8: 13951928220410398821, 12: 11264519815789708341, 16: 10785969492329186100,
             17: 11657257060370795958, 32: 17834958365485439928, 33: 8384286406595517647,
             64: 2085017786168345896, 65: 12252509226768757126, 128: 8037255945552765125,
             200: 11012550694396385670}


@pytest.mark.parametrize("length", sorted(REFERENCE))
def test_fingerprint64_matches_the_reference_library(length):
    data = np.array([((i * 131 + 7) ^ (i >> 3)) & 255 for i in range(length)], np.uint8)
    hashes = fingerprint64(np.stack([data, data]))
    assert hashes.dtype == np.uint64 and [int(h) for h in hashes] == [REFERENCE[length]] * 2


# ------------------------------------------------------------------ LSH_PROJECTION

HASH = np.array([[0.5, -1.25, 3.0], [2.0, 0.75, -0.5]], np.float32)
ROWS = np.array([[1, 2], [30000, -4], [5, 600]], np.int32)


def _lsh(kind, weight=None, hash_type=F32, outputs=6):
    inputs = [const(hash_type, HASH), feed(I32, ROWS),
              const(hash_type, weight) if weight is not None else const(hash_type, None),
              const(INT, kind)]
    return run1(Op.LSH_PROJECTION, inputs, out(I32, (outputs,)))


def test_sparse_signatures_pack_the_dense_bits():
    dense = _lsh(2, weight=np.array([1.0, 0.5, 2.0], np.float32))
    assert set(dense.tolist()) <= {0, 1}
    bits = dense.reshape(2, 3)
    packed = bits @ np.array([4, 2, 1])
    sparse = _lsh(3, weight=np.array([1.0, 0.5, 2.0], np.float32), outputs=2)
    deprecated = _lsh(1, weight=np.array([1.0, 0.5, 2.0], np.float32), outputs=2)
    assert deprecated.tolist() == packed.tolist()
    assert sparse.tolist() == (packed + np.array([0, 8])).tolist()


def test_omitted_weight_means_unit_weights():
    assert _lsh(2).tolist() == _lsh(2, weight=np.ones(3, np.float32)).tolist()


def test_lsh_bits_follow_the_sign_of_the_summed_hashes():
    """Each bit is 1 when the sum of Fingerprint64(seed bytes + row bytes) is positive."""
    expected = []
    for seed in HASH.reshape(-1):
        keys = np.concatenate([np.tile(np.frombuffer(np.float32(seed).tobytes(), np.uint8),
                                       (3, 1)), ROWS.view(np.uint8).reshape(3, -1)], axis=1)
        signed = fingerprint64(keys).view(np.int64).astype(np.float64)
        expected.append(int(signed.sum() > 0))
    assert _lsh(2).tolist() == expected


def test_lsh_rejects_an_unknown_type_and_a_misshaped_weight():
    with pytest.raises(BadDataError, match=r"input 3 \(type\) 4 is not a projection type"):
        _lsh(4)
    with pytest.raises(BadDataError, match=r"input 2 \(weight\) must have shape \[3\]"):
        _lsh(2, weight=np.ones(2, np.float32))


def test_float16_seeds_hash_as_float32():
    assert _lsh(2, hash_type=F16, weight=np.ones(3, np.float16)).tolist() == \
        _lsh(2, weight=np.ones(3, np.float32)).tolist()


def test_embedding_lookup_values_need_rank_2():
    with pytest.raises(BadDataError, match=r"input 1 \(values\) must have rank 2 or more"):
        run1(Op.EMBEDDING_LOOKUP, [feed(I32, [0]), feed(F32, [1.0, 2.0])], out(F32, (1,)))
