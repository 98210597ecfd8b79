"""Random sampling: RANDOM_MULTINOMIAL."""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define

define(Op.RANDOM_MULTINOMIAL, summary="samples classes from unnormalized log-probabilities",
       forms=[form("", "logits:T num_samples:i32 seeds:tensor_i32", "output:tensor_i32")],
       types=[combo(3, T="tensor_f16"), combo(3, T="tensor_f32")])
