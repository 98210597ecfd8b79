"""Normalizations: batch_norm, layer_norm, instance_norm, group_norm.

Freezing folds a batch norm that follows a convolution or linear layer into its weights
(capture/script.py); one left standalone is a per-channel MUL and ADD with constants folded
from its statistics. NNAPI (level 3) has no layer or group norm: they are composed from MEAN,
SUB, MUL, ADD and RSQRT (two-pass variance). So is instance_norm: Android 10's reference
INSTANCE_NORMALIZATION (which the conformance tests pin) divides by sqrt(mean(x^2) + eps)
rather than by the standard deviation, and its gamma and beta are scalars anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import arithmetic, in_float, reduce
from ..builder.common import constant_float, require_tensor, static_int
from ..builder.context import Arg, Converter
from ..builder.symbolic import SymInt
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


def _vector(v: Arg, what: str) -> np.ndarray | None:
    if v is None:
        return None
    if not isinstance(v, torch.Tensor):
        raise Unsupported(f"{what} computed by the model")
    return v.detach().double().reshape(-1).numpy()


def channel_affine(cx: Converter, x: TensorValue, scale: np.ndarray | None,
                   shift: np.ndarray | None) -> TensorValue:
    """``x * scale[c] + shift[c]`` over dimension 1 with constant vectors."""
    shape = (1, -1) + (1,) * (x.rank - 2)
    if scale is not None and not np.all(scale == 1.0):
        x = arithmetic(cx, Op.MUL, x, torch.from_numpy(scale.astype(np.float32).reshape(shape)))
    if shift is not None and np.any(shift != 0.0):
        x = arithmetic(cx, Op.ADD, x, torch.from_numpy(shift.astype(np.float32).reshape(shape)))
    return x


@lowering("aten::batch_norm", "aten::_native_batch_norm_legit_no_training",
          nnapi=("MUL", "ADD"), notes="folded into a preceding conv/linear by freezing;"
          " otherwise per-channel MUL + ADD")
def batch_norm(cx: Converter, x: Arg, weight: Arg, bias: Arg, mean: Arg, var: Arg,
               training: Arg = False, momentum: Arg = 0.1, eps: Arg = 1e-5, *rest: Arg
               ) -> TensorValue | tuple[TensorValue, None, None]:
    x = require_tensor(x)
    native = cx.current_node.kind == "aten::_native_batch_norm_legit_no_training"
    if native:
        momentum, eps = training, momentum  # (x, w, b, mean, var, momentum, eps)
        training = False
    if training is True:
        raise Unsupported("batch_norm in training mode")
    out = batch_norm_tensor(cx, x, weight, bias, mean, var, eps)
    # the export front-end gives the native op one output when only that one is read
    return (out, None, None) if native and len(cx.current_node.outputs) > 1 else out


def batch_norm_tensor(cx: Converter, x: TensorValue, weight: Arg, bias: Arg, mean: Arg,
                      var: Arg, eps: Arg) -> TensorValue:
    """``x`` normalized with running statistics: a per-channel MUL and ADD (in float)."""
    m = _vector(mean, "running_mean")
    v = _vector(var, "running_var")
    if m is None or v is None:
        raise Unsupported("batch_norm without running statistics")
    e = constant_float(eps, "eps")
    w = _vector(weight, "weight")
    b = _vector(bias, "bias")
    scale = 1.0 / np.sqrt(v + e)
    if w is not None:
        scale = scale * w
    shift = -m * scale + (b if b is not None else 0.0)

    def compute(f: TensorValue) -> TensorValue:
        return channel_affine(cx, f, scale, shift)

    return in_float(cx, x, compute)


def normalize(cx: Converter, x: TensorValue, dims: list[int], eps: float) -> TensorValue:
    """``(x - mean) / sqrt(var + eps)`` over PyTorch dims ``dims`` (biased variance)."""
    mu = reduce(cx, Op.MEAN, x, dims, True)
    dev = arithmetic(cx, Op.SUB, x, mu)
    var = reduce(cx, Op.MEAN, arithmetic(cx, Op.MUL, dev, dev), dims, True)
    inv = cx.emit_like(Op.RSQRT, dict(input=arithmetic(cx, Op.ADD, var, eps)), var)
    return arithmetic(cx, Op.MUL, dev, inv)


@lowering("aten::layer_norm", nnapi=("MEAN", "SUB", "MUL", "ADD", "RSQRT"), any_rank=True,
          notes="composed (no LAYER_NORMALIZATION before level 4)")
def layer_norm(cx: Converter, x: Arg, normalized_shape: Sequence[SymInt], weight: Arg = None,
               bias: Arg = None, eps: Arg = 1e-5, *rest: Arg) -> TensorValue:
    x = require_tensor(x)
    k = len(normalized_shape)
    dims = list(range(x.rank - k, x.rank))
    e = constant_float(eps, "eps")

    def compute(f: TensorValue) -> TensorValue:
        y = normalize(cx, f, dims, e)
        if weight is not None:
            y = arithmetic(cx, Op.MUL, y, weight)
        if bias is not None:
            y = arithmetic(cx, Op.ADD, y, bias)
        return y

    return in_float(cx, x, compute)


@lowering("aten::instance_norm", nnapi=("MEAN", "SUB", "MUL", "ADD", "RSQRT"),
          notes="composed: Android 10's INSTANCE_NORMALIZATION divides by the root mean square"
          " instead of the standard deviation")
def instance_norm(cx: Converter, x: Arg, weight: Arg, bias: Arg, running_mean: Arg,
                  running_var: Arg, use_input_stats: bool = True, momentum: Arg = 0.1,
                  eps: Arg = 1e-5, *rest: Arg) -> TensorValue:
    x = require_tensor(x)
    e = constant_float(eps, "eps")
    if not use_input_stats:
        return batch_norm_tensor(cx, x, weight, bias, running_mean, running_var, e)
    w = _vector(weight, "weight")
    b = _vector(bias, "bias")

    def compute(f: TensorValue) -> TensorValue:
        y = normalize(cx, f, list(range(2, f.rank)), e)
        return channel_affine(cx, y, w, b)

    return in_float(cx, x, compute)


@lowering("aten::group_norm", nnapi=("RESHAPE", "MEAN", "SUB", "MUL", "ADD", "RSQRT"),
          notes="composed over [N, groups, C/groups * spatial]")
def group_norm(cx: Converter, x: Arg, groups: int, weight: Arg = None, bias: Arg = None,
               eps: Arg = 1e-5, *rest: Arg) -> TensorValue:
    x = require_tensor(x)
    g = static_int(groups, "num_groups")
    e = constant_float(eps, "eps")
    w = _vector(weight, "weight")
    b = _vector(bias, "bias")
    c = static_int(x.shape[1], "channels")
    if c % g:
        raise Unsupported(f"{c} channels in {g} groups")

    def compute(f: TensorValue) -> TensorValue:
        rest_size: SymInt = 1
        for d in f.shape[2:]:
            rest_size = rest_size * d
        grouped = cx.reshape(f, (f.shape[0], g, (c // g) * rest_size))
        y = normalize(cx, grouped, [2], e)
        y = cx.reshape(y, f.shape)
        return channel_affine(cx, y, w, b)

    return in_float(cx, x, compute)

