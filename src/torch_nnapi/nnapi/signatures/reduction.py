"""Reductions along axes: MEAN, REDUCE_ALL/ANY/MAX/MIN/PROD/SUM, ARGMAX/ARGMIN, TOPK_V2."""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define
from ._rules import same_quant
from ._shape_types import ALL4, SIGNED_Q8, float_q8, types_since_3

define(Op.MEAN, summary="mean along axes (keep_dims > 0 keeps them with size 1)",
       forms=[form("", "input:T axes:tensor_i32 keep_dims:i32", "output:T")],
       types=float_q8(2), rules=[same_quant()])

_REDUCE = form("", "input:T axes:tensor_i32 keep_dims:bool", "output:T")

define(Op.REDUCE_ALL, summary="logical and along axes", forms=[_REDUCE],
       types=[combo(3, T="tensor_bool8")])
define(Op.REDUCE_ANY, summary="logical or along axes", forms=[_REDUCE],
       types=[combo(3, T="tensor_bool8")])
define(Op.REDUCE_MAX, summary="maximum along axes", forms=[_REDUCE],
       types=[*types_since_3("tensor_f16", "tensor_f32", "tensor_q8"), SIGNED_Q8],
       rules=[same_quant()])
define(Op.REDUCE_MIN, summary="minimum along axes", forms=[_REDUCE],
       types=[*types_since_3("tensor_f16", "tensor_f32", "tensor_q8"), SIGNED_Q8],
       rules=[same_quant()])
define(Op.REDUCE_PROD, summary="product along axes", forms=[_REDUCE],
       types=types_since_3("tensor_f16", "tensor_f32"))
define(Op.REDUCE_SUM, summary="sum along axes", forms=[_REDUCE],
       types=types_since_3("tensor_f16", "tensor_f32"))

_ARG = form("", "input:T axis:i32", "output:tensor_i32")

define(Op.ARGMAX, summary="index of the largest value along an axis", forms=[_ARG],
       types=ALL4)
define(Op.ARGMIN, summary="index of the smallest value along an axis", forms=[_ARG],
       types=ALL4)

define(Op.TOPK_V2, summary="the k largest values of the last dimension, and their indices",
       forms=[form("", "input:T k:i32", "values:T indices:tensor_i32")],
       types=ALL4, rules=[same_quant("values")])
