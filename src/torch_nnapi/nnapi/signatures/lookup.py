"""Lookups and hashing: EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION."""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define
from ._rules import fixed_output_quant, same_quant

_VALUE_TYPES = [combo(1, T=t) for t in ("tensor_f32", "tensor_i32", "tensor_q8")]

define(Op.EMBEDDING_LOOKUP, summary="rows of values selected by index",
       forms=[form("", "lookups:tensor_i32 values:T", "output:T")],
       types=[*_VALUE_TYPES, combo(4, T="tensor_f16"), combo(4, T="tensor_q8_signed")],
       rules=[same_quant(input="values")])

define(Op.HASHTABLE_LOOKUP, summary="rows of values selected by key (zeros on a miss)",
       forms=[form("", "lookups:tensor_i32 keys:tensor_i32 values:T", "output:T hits:tensor_q8")],
       types=_VALUE_TYPES,
       rules=[same_quant(input="values"), fixed_output_quant(1.0, 0, output="hits")])

# The hash seeds (and weights) are float32, or float16 since level 3; the hashed input may
# be of any of four types.
define(Op.LSH_PROJECTION, summary="locality-sensitive hash of the input rows to bits",
       forms=[form("", "hash:H input:T weight:H? type:i32", "output:tensor_i32")],
       types=[combo(3 if h == "tensor_f16" or t == "tensor_f16" else 1, H=h, T=t)
              for h in ("tensor_f32", "tensor_f16")
              for t in ("tensor_f32", "tensor_f16", "tensor_i32", "tensor_q8")])
