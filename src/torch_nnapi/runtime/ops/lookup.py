"""EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION.

LSH_PROJECTION hashes, for every seed of input 0 and every row of input 1, the bytes of the
float32 seed followed by the row's bytes with FarmHash Fingerprint64, exactly as Android's
reference does, so bit vectors match Android's bit for bit.
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError, OpFailedError
from ..context import KernelContext, Shape
from ..registry import register
from ._farmhash import fingerprint64
from .shape_common import check_constant_indices, check_indices

# --------------------------------------------------------------------------------------------
# EMBEDDING_LOOKUP and HASHTABLE_LOOKUP


def _check_rank(ctx: KernelContext, name: str, least: int, most: int | None = None) -> Shape:
    """Input ``name``'s shape, after checking least <= rank <= most (no bound when None)."""
    shape = ctx.input_shape(name)
    if len(shape) < least or (most is not None and len(shape) > most):
        wanted = f"{least}" if most == least else f"{least} or more"
        raise BadDataError(f"{ctx.describe_input(name)} must have rank {wanted}, got shape"
                           f" {list(shape)}")
    return shape


def _prepare_embedding(ctx: KernelContext) -> list[Shape]:
    lookups = _check_rank(ctx, "lookups", 1, 1)
    values = _check_rank(ctx, "values", 2)
    check_constant_indices(ctx, "lookups", "values", 0)
    return [lookups + values[1:]]


@register(Op.EMBEDDING_LOOKUP, prepare=_prepare_embedding)
def embedding_lookup(ctx: KernelContext) -> np.ndarray:
    check_indices(ctx, "lookups", "values", 0)
    return np.take(ctx.input("values"), ctx.input("lookups"), axis=0)


def _prepare_hashtable(ctx: KernelContext) -> list[Shape]:
    lookups = _check_rank(ctx, "lookups", 1, 1)
    keys = _check_rank(ctx, "keys", 1, 1)
    values = _check_rank(ctx, "values", 1)
    if keys[0] != values[0]:
        raise BadDataError(f"{ctx.describe_input('keys')} has {keys[0]} keys but"
                           f" {ctx.describe_input('values')} has {values[0]} rows")
    return [lookups + values[1:], lookups]


@register(Op.HASHTABLE_LOOKUP, prepare=_prepare_hashtable)
def hashtable_lookup(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose key equals each lookup; a miss gives a row of zero bytes and hit 0."""
    lookups, keys, values = ctx.input("lookups"), ctx.input("keys"), ctx.input("values")
    if keys.size > 1 and (np.diff(keys.astype(np.int64)) < 0).any():
        raise OpFailedError(f"{ctx.describe_input('keys')} must be sorted in ascending order")
    rows = np.searchsorted(keys, lookups)
    clipped = np.minimum(rows, max(len(keys) - 1, 0))
    hits = (rows < len(keys)) & (keys[clipped] == lookups) if len(keys) else \
        np.zeros(lookups.shape, bool)
    output = np.zeros(lookups.shape + values.shape[1:], values.dtype)
    output[hits] = values[rows[hits]]
    return output, hits.astype(np.uint8)


# --------------------------------------------------------------------------------------------
# LSH_PROJECTION


class LshType(IntEnum):
    SPARSE_DEPRECATED = 1  # signatures without the per-function offset (API 27/28)
    DENSE = 2
    SPARSE = 3


def _lsh_plan(ctx: KernelContext) -> tuple[LshType, Shape]:
    """(projection type, output shape), checked."""
    hash_shape = _check_rank(ctx, "hash", 2, 2)
    functions, bits = hash_shape
    if bits > 32:
        raise BadDataError(f"{ctx.describe_input('hash')} has {bits} bits per function; at most"
                           " 32")
    rows = _check_rank(ctx, "input", 1)[0]
    if ctx.has_input("weight"):
        weight = ctx.input_shape("weight")
        if tuple(weight) != (rows,):
            raise BadDataError(f"{ctx.describe_input('weight')} must have shape [{rows}] (one"
                               f" weight per row of {ctx.describe_input('input')}), got"
                               f" {list(weight)}")
    try:
        kind = LshType(ctx.scalar("type"))
    except ValueError:
        raise BadDataError(f"{ctx.describe_input('type')} {ctx.scalar('type')} is not a"
                           " projection type (1 sparse deprecated, 2 dense, 3 sparse)") from None
    if kind == LshType.DENSE:
        return kind, (functions * bits,)
    if kind == LshType.SPARSE and bits + math.ceil(math.log2(max(functions, 1))) > 32:
        raise BadDataError(f"{ctx.describe_input('hash')} {list(hash_shape)}: sparse signatures"
                           " with offsets need bits + ceil(log2(functions)) <= 32")
    return kind, (functions,)


@register(Op.LSH_PROJECTION, prepare=lambda ctx: [_lsh_plan(ctx)[1]])
def lsh_projection(ctx: KernelContext) -> np.ndarray:
    kind, _ = _lsh_plan(ctx)
    functions, bits = ctx.input_shape("hash")
    bit_values = _sign_bits(ctx).reshape(functions, bits)
    if kind == LshType.DENSE:
        return bit_values.reshape(-1).astype(np.int32)
    weights = np.left_shift(np.int64(1), np.arange(bits - 1, -1, -1, dtype=np.int64))
    signatures = bit_values.astype(np.int64) @ weights
    if kind == LshType.SPARSE:
        signatures += np.arange(functions, dtype=np.int64) << bits
    # wraps as the int32 arithmetic does
    return cast("np.ndarray", signatures.astype(np.uint32).view(np.int32))


def _sign_bits(ctx: KernelContext) -> np.ndarray:
    """For each seed: 1 when the weighted sum of the rows' signed hashes is positive."""
    seeds = ctx.float_input("hash").reshape(-1)
    x = ctx.input("input")
    rows = np.ascontiguousarray(x).reshape(x.shape[0], math.prod(x.shape[1:])).view(np.uint8)
    seed_bytes = seeds.astype("<f4").view(np.uint8).reshape(-1, 4)
    keys = np.concatenate([np.repeat(seed_bytes, len(rows), axis=0),
                           np.tile(rows, (len(seeds), 1))], axis=1)
    hashes = fingerprint64(keys).view(np.int64).astype(np.float64).reshape(len(seeds), -1)
    if ctx.has_input("weight"):
        hashes = hashes * ctx.float_input("weight").astype(np.float64)
    # Accumulated row by row, in the reference's order, for the same rounding.
    scores = np.add.accumulate(hashes, axis=1)[:, -1] if hashes.shape[1] else \
        np.zeros(len(seeds))
    return (scores > 0).astype(np.int32)
