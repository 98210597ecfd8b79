"""RANDOM_MULTINOMIAL: draws classes with probabilities softmax(logits).

Android's reference draws from TensorFlow's Philox stream; NNAPI (and its conformance tests)
only promise the distribution, so this kernel uses NumPy's Philox generator keyed by the two
seeds of input 2: the same seeds give the same samples. As in the reference, non-finite
logits get probability zero and a class is chosen by inverting the cumulative distribution.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError, OpFailedError
from ..context import KernelContext, Shape
from ..registry import register
from .shape_common import int_vector


def _prepare(ctx: KernelContext) -> list[Shape]:
    shape = ctx.input_shape("logits")
    if len(shape) != 2:
        raise BadDataError(f"{ctx.describe_input('logits')} must have shape [batches, classes],"
                           f" got {list(shape)}")
    samples = ctx.scalar("num_samples")
    if samples < 0:
        raise BadDataError(f"{ctx.describe_input('num_samples')} {samples} must not be"
                           " negative")
    seeds = ctx.input_shape("seeds")
    if tuple(seeds) != (2,):
        raise BadDataError(f"{ctx.describe_input('seeds')} must have shape [2], got"
                           f" {list(seeds)}")
    return [(shape[0], samples)]


def _generator(ctx: KernelContext) -> np.random.Generator:
    low, high = (s & 0xFFFFFFFF for s in int_vector(ctx, "seeds", 2))
    return np.random.Generator(np.random.Philox(key=low | high << 32))


@register(Op.RANDOM_MULTINOMIAL, prepare=_prepare)
def random_multinomial(ctx: KernelContext) -> np.ndarray:
    logits = ctx.float_input("logits").astype(np.float64)
    samples = ctx.scalar("num_samples")
    finite = np.isfinite(logits)
    peak = np.max(logits, axis=1, initial=-np.inf, where=finite, keepdims=True)
    weights = np.where(finite, np.exp(np.where(finite, logits, 0.0) - np.where(
        np.isfinite(peak), peak, 0.0)), 0.0)
    cdf = np.cumsum(weights, axis=1)
    totals = cdf[:, -1] if cdf.shape[1] else np.zeros(len(cdf))
    empty = np.flatnonzero(~(totals > 0))
    if samples and empty.size:
        raise OpFailedError(f"{ctx.describe_input('logits')} row {int(empty[0])} has no"
                            " finite logit to sample from")
    targets = _generator(ctx).random((len(cdf), samples)) * totals[:, None]
    out = np.empty((len(cdf), samples), np.int32)
    for row in range(len(cdf)):  # one vectorized search per batch row
        out[row] = np.searchsorted(cdf[row], targets[row], side="right")
    return out
