"""What the native kernel families share when they plan an operation (see runtime/registry.py):
whether a plan may read the operation's parameters once, the layout the C kernels take, and
the 256 values an 8-bit table is built on.
Each family imports these from here, none from another family.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperandType
from ..context import KernelContext


def constant_parameters(ctx: KernelContext, *data: str) -> bool:
    """Whether every input but the ``data`` ones (by default "input") is a constant of the
    model, which a plan may read once: a runner is reused while the shapes of the data
    inputs stay the same, whatever their values."""
    return ctx.variable_inputs <= set(data or ("input",))


def contiguous_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """An image as the C kernels read it: NHWC and C-contiguous (NCHW inputs transposed, as
    the reference kernels do; ops.spatial.from_nhwc turns the result back)."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if nchw else x


def every_byte(kind: OperandType) -> np.ndarray:
    """The 256 values of an 8-bit type in the order of their bytes (int8: 0..127, -128..-1),
    so that a table built on them is indexed by a value's byte (``lut`` of ``x.view(uint8)``)."""
    every = np.arange(256, dtype=np.uint8)
    return every.view(np.int8) if kind == OperandType.TENSOR_QUANT8_ASYMM_SIGNED else every
