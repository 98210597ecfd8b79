"""How ``trace_to_code`` writes each node of an exported graph as a line of Python.

ATen ops become the ``torch`` or ``torch.nn.functional`` call a person would write (most
take ATen's arguments in ATen's order, so the node's own arguments carry over); a few need
their arguments rearranged (batch norm, layer norm, in-place activations, slicing); any other
ATen op is called as ``torch.ops.aten.<op>.<overload>``, which is still plain PyTorch. PT2E's
quantize/dequantize ops become small functions written into the file, with PyTorch's own
arithmetic. Anything else (custom operators, control-flow operators) cannot be written as a
standalone file: :class:`CodegenError` names the node.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence

import torch
from torch.fx.node import Argument


class CodegenError(ValueError):
    """A node trace_to_code cannot express in a standalone Python file."""


# ATen op -> the torch / torch.nn.functional function with the same positional arguments.
SAME_ARGUMENTS = {
    "aten::conv1d": "F.conv1d", "aten::conv2d": "F.conv2d", "aten::conv3d": "F.conv3d",
    "aten::conv_transpose1d": "F.conv_transpose1d",
    "aten::conv_transpose2d": "F.conv_transpose2d", "aten::linear": "F.linear",
    "aten::max_pool1d": "F.max_pool1d", "aten::max_pool2d": "F.max_pool2d",
    "aten::avg_pool1d": "F.avg_pool1d", "aten::avg_pool2d": "F.avg_pool2d",
    "aten::adaptive_avg_pool1d": "F.adaptive_avg_pool1d",
    "aten::adaptive_avg_pool2d": "F.adaptive_avg_pool2d",
    "aten::relu": "F.relu", "aten::relu6": "F.relu6", "aten::hardtanh": "F.hardtanh",
    "aten::hardswish": "F.hardswish", "aten::hardsigmoid": "F.hardsigmoid",
    "aten::silu": "F.silu", "aten::gelu": "F.gelu",
    "aten::leaky_relu": "F.leaky_relu", "aten::mish": "F.mish", "aten::softplus": "F.softplus",
    "aten::dropout": "F.dropout", "aten::pad": "F.pad",
    "aten::scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "aten::pixel_shuffle": "F.pixel_shuffle", "aten::channel_shuffle": "torch.channel_shuffle",
    "aten::sigmoid": "torch.sigmoid", "aten::tanh": "torch.tanh", "aten::exp": "torch.exp",
    "aten::log": "torch.log", "aten::sqrt": "torch.sqrt", "aten::rsqrt": "torch.rsqrt",
    "aten::abs": "torch.abs", "aten::neg": "torch.neg", "aten::erf": "torch.erf",
    "aten::add": "torch.add", "aten::sub": "torch.sub", "aten::mul": "torch.mul",
    "aten::div": "torch.div", "aten::pow": "torch.pow", "aten::maximum": "torch.maximum",
    "aten::minimum": "torch.minimum", "aten::clamp": "torch.clamp", "aten::where": "torch.where",
    "aten::matmul": "torch.matmul", "aten::bmm": "torch.bmm", "aten::addmm": "torch.addmm",
    "aten::einsum": "torch.einsum", "aten::mean": "torch.mean", "aten::sum": "torch.sum",
    "aten::amax": "torch.amax", "aten::max": "torch.max", "aten::min": "torch.min",
    "aten::softmax": "torch.softmax", "aten::log_softmax": "torch.log_softmax",
    "aten::cat": "torch.cat", "aten::stack": "torch.stack", "aten::flatten": "torch.flatten",
    "aten::reshape": "torch.reshape", "aten::permute": "torch.permute",
    "aten::transpose": "torch.transpose", "aten::unsqueeze": "torch.unsqueeze",
    "aten::squeeze": "torch.squeeze", "aten::select": "torch.select", "aten::split": "torch.split",
    "aten::chunk": "torch.chunk", "aten::unbind": "torch.unbind", "aten::roll": "torch.roll",
    "aten::clone": "torch.clone", "aten::cumsum": "torch.cumsum", "aten::topk": "torch.topk",
    "aten::argmax": "torch.argmax",
}
# ATen ops written as a method of their first argument.
METHODS = {"aten::view": "view", "aten::contiguous": "contiguous", "aten::expand": "expand",
           "aten::add_": "add_", "aten::mul_": "mul_", "aten::sub_": "sub_",
           "aten::div_": "div_", "aten::copy_": "copy_", "aten::masked_fill": "masked_fill",
           "aten::repeat": "repeat", "aten::type_as": "type_as", "aten::unflatten": "unflatten"}
# In-place activations: the functional form with inplace=True.
IN_PLACE = {"aten::relu_": "F.relu", "aten::hardswish_": "F.hardswish",
            "aten::hardsigmoid_": "F.hardsigmoid", "aten::silu_": "F.silu",
            "aten::relu6_": "F.relu6", "aten::hardtanh_": "F.hardtanh",
            "aten::dropout_": "F.dropout", "aten::leaky_relu_": "F.leaky_relu"}
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//",
           operator.truediv: "/", operator.mod: "%", operator.eq: "==", operator.ne: "!=",
           operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}
_LONG_MAX = 2 ** 63 - 1

# PT2E's quantize/dequantize ops: the helper written into the file for each. Each calls the
# registered op (not its arithmetic): the converter folds those into 8-bit operands, so the
# written model converts as the quantized model it was written from does.
QUANT_OPS_IMPORT = ("import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers"
                    " PT2E's quantize ops")
QUANT_HELPERS = {
    "quantized_decomposed::quantize_per_tensor": ("quantize_per_tensor", '''
def quantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype):
    """PT2E's quantize: round(x / scale) + zero point, clamped, as integers of ``dtype``."""
    return torch.ops.quantized_decomposed.quantize_per_tensor(x, scale, zero_point, quant_min,
                                                              quant_max, dtype)
'''),
    "quantized_decomposed::dequantize_per_tensor": ("dequantize_per_tensor", '''
def dequantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype, out_dtype=None):
    """PT2E's dequantize: (integers - zero point) * scale."""
    return torch.ops.quantized_decomposed.dequantize_per_tensor(
        x, scale, zero_point, quant_min, quant_max, dtype, out_dtype=out_dtype)
'''),
    "quantized_decomposed::dequantize_per_channel": ("dequantize_per_channel", '''
def dequantize_per_channel(x, scales, zero_points, axis, quant_min, quant_max, dtype,
                           out_dtype=None):
    """PT2E's per-channel dequantize: one scale and zero point per index of ``axis``."""
    return torch.ops.quantized_decomposed.dequantize_per_channel(
        x, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype=out_dtype)
'''),
}


def literal(value: object, name_of: Callable[[torch.fx.Node], str]) -> str:
    """Python source for an argument: node values by name, constants as literals."""
    if isinstance(value, torch.fx.Node):
        return name_of(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join(literal(v, name_of) for v in value)
        if isinstance(value, list):
            return f"[{items}]"
        return f"({items}{',' if len(value) == 1 else ''})"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, (bool, int, str)) or value is None:
        return repr(value)
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout, torch.qscheme)):
        return str(value)
    if isinstance(value, torch.device):
        return f'torch.device("{value}")'
    raise CodegenError(f"a constant of type {type(value).__name__} ({value!r:.60})")


# The Python expression naming a node's value.
NameOf = Callable[[torch.fx.Node], str]
# ``args(values=node.args, kwargs=node.kwargs)``: a call's arguments written out.
Arguments = Callable[..., str]


def render_call(node: torch.fx.Node, name_of: NameOf, helpers: set[str]) -> str:
    """The Python expression computing ``node`` (a call_function node)."""
    target = node.target

    def args(values: Sequence[Argument] | None = None,
             kwargs: Mapping[str, Argument] | None = None) -> str:
        values = node.args if values is None else values
        kwargs = node.kwargs if kwargs is None else kwargs
        parts = [literal(v, name_of) for v in values]
        parts += [f"{k}={literal(v, name_of)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    if target is operator.getitem:
        source, index = node.args
        return f"{literal(source, name_of)}[{literal(index, name_of)}]"
    if target in _BINARY:
        a, b = node.args
        return f"{literal(a, name_of)} {_BINARY[target]} {literal(b, name_of)}"
    if target is operator.neg:
        return f"-{literal(node.args[0], name_of)}"
    if not isinstance(target, torch._ops.OpOverload):
        raise CodegenError(f"the call of {getattr(target, '__name__', target)} is not an ATen"
                           " operator")
    kind = target._schema.name
    namespace = kind.split("::", 1)[0]
    if kind in QUANT_HELPERS:
        helper, _ = QUANT_HELPERS[kind]
        helpers.add(kind)
        return f"{helper}({args()})"
    if namespace != "aten":
        raise CodegenError(f"{kind} is not an ATen operator: a standalone file cannot call it")
    special = _SPECIAL.get(kind)
    if special is not None:
        return special(node, name_of, args)
    if kind in SAME_ARGUMENTS:
        return f"{SAME_ARGUMENTS[kind]}({args()})"
    if kind in IN_PLACE:
        return f"{IN_PLACE[kind]}({args()}, inplace=True)"
    if kind in METHODS and node.args:
        return f"{literal(node.args[0], name_of)}.{METHODS[kind]}({args(node.args[1:])})"
    overload = target._overloadname
    return f"torch.ops.aten.{kind.split('::', 1)[1]}.{overload}({args()})"


def _batch_norm(node: torch.fx.Node, name_of: NameOf, args: Arguments) -> str:
    x, weight, bias, mean, var, training, momentum, eps = node.args[:8]
    parts = [literal(v, name_of) for v in (x, mean, var)]
    parts += [f"{k}={literal(v, name_of)}" for k, v in (
        ("weight", weight), ("bias", bias), ("training", training), ("momentum", momentum),
        ("eps", eps))]
    return f"F.batch_norm({', '.join(parts)})"


def _layer_norm(node: torch.fx.Node, name_of: NameOf, args: Arguments) -> str:
    return f"F.layer_norm({args(node.args[:5])})"


def _slice(node: torch.fx.Node, name_of: NameOf, args: Arguments) -> str:
    if node.kwargs:
        return f"torch.ops.aten.slice.Tensor({args()})"
    x = literal(node.args[0], name_of)
    dim, start, end, step = (list(node.args[1:]) + [0, None, None, 1][len(node.args) - 1:])[:4]
    if not isinstance(dim, int) or dim < 0:
        return f"torch.ops.aten.slice.Tensor({args()})"
    start_text = "" if start in (None, 0) else literal(start, name_of)
    end_text = "" if end is None or end == _LONG_MAX else literal(end, name_of)
    step_text = "" if step in (None, 1) else f":{literal(step, name_of)}"
    return f"{x}[{':, ' * dim}{start_text}:{end_text}{step_text}]"


def _size(node: torch.fx.Node, name_of: NameOf, args: Arguments) -> str:
    return f"{literal(node.args[0], name_of)}.size({literal(node.args[1], name_of)})"


_SPECIAL: dict[str, Callable[[torch.fx.Node, NameOf, Arguments], str]] = {
    "aten::batch_norm": _batch_norm, "aten::layer_norm": _layer_norm, "aten::slice": _slice,
    "aten::sym_size": _size,
}
