"""What the native kernel families share when they plan an operation (see runtime/registry.py):
whether a plan may read the operation's parameters once, and the layout the C kernels take.
Each family imports these from here, none from another family.
"""

from __future__ import annotations

import numpy as np

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
