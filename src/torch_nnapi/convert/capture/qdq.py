"""Folding PT2E's quantize/dequantize patterns into quantized operations.

``convert_pt2e`` expresses a quantized model as float ops between
``quantized_decomposed::quantize_per_tensor`` / ``dequantize_per_tensor`` pairs, with the
weights stored in 8 bits and dequantized. :func:`fold` rewrites such a graph into the form the
converter already lowers for PyTorch's own quantized models:

1. every quantize becomes ``aten::quantize_per_tensor`` (its output a quint8 tensor, or qint8
   for a model quantized for feature level 4), every
   dequantize ``aten::dequantize``, and stored weights PyTorch quantized tensors;
2. each ``dequantize -> op [-> ReLU] -> quantize`` pattern becomes the op on the quantized
   inputs: ``quantized::conv2d``/``linear``/``add``/``mul``/``cat``/``sigmoid`` (with the
   weights and bias unpacked, :class:`ConvParams`), or, for pools, clamps, reshapes and the
   like, the aten op itself, whose lowering keeps the input's quantization.

What no pattern covers stays between DEQUANTIZE and QUANTIZE in NNAPI: a float island. A
pattern folds only when its inputs and output share one 8-bit type, as NNAPI requires.
"""

from __future__ import annotations

import math

import torch

from ..quant_policy import ACTIVATION_TYPES, RULES, fixed_output
from .graph import DTYPE_OF_CODE, SCALAR_TYPES, ExampleTensor, Graph, Node, Value
from .packed import ConvParams, LinearParams, StoredWeight

_QUANTIZE = ("quantized_decomposed::quantize_per_tensor",)
_DEQUANTIZE = ("quantized_decomposed::dequantize_per_tensor",
               "quantized_decomposed::dequantize_per_channel")
PT2E_OPS = (*_QUANTIZE, *_DEQUANTIZE)
_QUANT_NAMES = {"uint8": "quint8", "int8": "qint8"}

_ACTIVATIONS = ("aten::relu", "aten::relu_", "aten::relu6", "aten::relu6_",
                "aten::hardtanh", "aten::hardtanh_")
_BINARY = {"aten::add": "quantized::add", "aten::add_": "quantized::add",
           "aten::mul": "quantized::mul", "aten::mul_": "quantized::mul"}
_CATS = ("aten::cat", "aten::concat", "aten::concatenate")
# Ops whose lowerings run a quantized input as is, the output quantized like the input.
SAME_QUANT = ("aten::relu", "aten::relu_", "aten::relu6", "aten::relu6_", "aten::hardtanh",
              "aten::hardtanh_", "aten::max_pool2d", "aten::avg_pool2d",
              "aten::adaptive_avg_pool2d", "aten::mean", "aten::flatten", "aten::view",
              "aten::reshape", "aten::_unsafe_view", "aten::squeeze", "aten::unsqueeze",
              "aten::contiguous", "aten::clone", "aten::dropout", "aten::dropout_",
              "aten::permute", "aten::transpose", "aten::pad", "aten::constant_pad_nd",
              "aten::upsample_nearest2d")
# Ops whose lowerings run a quantized input, the output quantized on its own (HARD_SWISH,
# level 4; the lowering computes in float below it).
_OWN_QUANT = ("aten::hardswish", "aten::hardswish_")
# Ops whose NNAPI output quantization is fixed (policy.RULES names the NNAPI operation, its
# signature the parameters per 8-bit type); folded when the model's match.
_FIXED = {"aten::sigmoid": "quantized::sigmoid", "aten::sigmoid_": "quantized::sigmoid",
          "aten::softmax": None, "aten::_softmax": None, "aten::tanh": None,
          "aten::tanh_": None}

_QUANTIZE_SCHEMA = ("aten::quantize_per_tensor(Tensor self, float scale, int zero_point,"
                    " ScalarType dtype) -> Tensor")
_DEQUANTIZE_SCHEMA = "aten::dequantize.self(Tensor self) -> Tensor"


def fold(graph: Graph) -> None:
    """Rewrites PT2E's quantize/dequantize representation in place (nothing to do for other
    graphs)."""
    if any(n.kind in _QUANTIZE or n.kind in _DEQUANTIZE for n in graph.nodes):
        _Folder(graph).run()


class _Folder:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.removed: set[int] = set()
        self.stored: dict[Value, StoredWeight] = {}  # dequantized constants: their integers
        self._to_aten()
        self.readers: dict[Value, list[Node | None]] = {}  # None: the graph's output
        self.producer: dict[Value, Node] = {}
        # every quantized activation: the output of a quantize, with its parameters and type
        self.quantized: dict[Value, tuple[float, int]] = {}
        self.dtypes: dict[Value, str] = {}
        for node in graph.walk():
            for v in node.inputs:
                self.readers.setdefault(v, []).append(node)
            for v in node.outputs:
                self.producer[v] = node
            dtype = _dtype_name(node.inputs[3]) if node.kind == "aten::quantize_per_tensor" \
                else ""
            if dtype in _QUANT_NAMES.values():
                self.quantized[node.outputs[0]] = _quant_params(node)
                self.dtypes[node.outputs[0]] = dtype
        self.readers.setdefault(graph.output, []).append(None)

    def _to_aten(self) -> None:
        """Quantizes become aten::quantize_per_tensor (quint8 or qint8 outputs), dequantizes of
        activations aten::dequantize, and dequantized stored weights float constants (their
        integers kept in ``self.stored`` for the patterns that run them in 8 bits)."""
        for node in self.graph.nodes:
            if node.kind in _QUANTIZE:
                x, scale, zero_point, _, _, dtype = node.inputs[:6]
                name = _dtype_name(dtype)
                if name not in _QUANT_NAMES or not (scale.is_constant
                                                    and zero_point.is_constant):
                    continue  # left as is: no lowering, reported as such
                node.kind, node.schema = "aten::quantize_per_tensor", _QUANTIZE_SCHEMA
                node.inputs = [x, scale, zero_point,
                               _constant(SCALAR_TYPES[_QUANT_NAMES[name]])]
                _as_quantized(node.outputs[0], float(_number(scale.constant)),
                              int(_number(zero_point.constant)), _QUANT_NAMES[name])
            elif node.kind in _DEQUANTIZE:
                if all(v.is_constant for v in node.inputs):
                    out = node.outputs[0]
                    self.stored[out] = _stored_weight(node)
                    out.constant = self.stored[out].dequantize().float()
                    self.removed.add(id(node))
                else:
                    node.kind, node.schema = "aten::dequantize", _DEQUANTIZE_SCHEMA
                    node.inputs = node.inputs[:1]
        self.graph.nodes[:] = [n for n in self.graph.nodes if id(n) not in self.removed]

    def run(self) -> None:
        for node in list(self.graph.nodes):
            if id(node) in self.removed:
                continue
            kind = node.kind
            if kind in ("aten::conv2d", "aten::conv_transpose2d", "aten::linear",
                        "aten::convolution", "aten::addmm"):
                self._weighted(node)
            elif kind in _BINARY:
                self._binary(node)
            elif kind in _CATS:
                self._cat(node)
            elif kind in _FIXED:
                self._fixed(node)
            elif kind in SAME_QUANT:
                self._same(node)
            elif kind in _OWN_QUANT:
                self._own(node)
        self._drop_unread_dequantizes()
        self.graph.nodes[:] = [n for n in self.graph.nodes if id(n) not in self.removed]

    # -------------------------------------------------------------- patterns

    def _weighted(self, node: Node) -> None:
        """conv2d, conv_transpose2d and linear, and the forms ExecuTorch's edge dialect gives
        them (convolution; addmm of the bias, the input and the weight's permute)."""
        operands = self._addmm_operands(node) if node.kind == "aten::addmm" else node.inputs[:3]
        if operands is None:
            return
        x = self._quantized_source(operands[0])
        weight = self._constant_source(operands[1])
        bias = operands[2]
        bias_value = bias.constant if not _is_none(bias) else None
        if x is None or not isinstance(weight, StoredWeight) \
                or (bias_value is not None and not isinstance(bias_value, torch.Tensor)):
            return
        constants = [v.constant for v in node.inputs[3:]]
        if node.kind == "aten::convolution" and len(constants[0]) != 2:
            return  # a 1-D or 3-D convolution: float
        end = self._output_quantize(node)
        if end is None:
            return
        params: ConvParams | LinearParams
        if node.kind in ("aten::linear", "aten::addmm"):
            kind, params = "quantized::linear", LinearParams(weight, bias_value)
        elif node.kind == "aten::conv2d":
            stride, padding, dilation, groups = constants
            kind, params = "quantized::conv2d", ConvParams(weight, bias_value, stride,
                                                           padding, dilation, groups)
        elif node.kind == "aten::convolution":
            stride, padding, dilation, transposed, output_padding, groups = constants
            kind = "quantized::conv_transpose2d" if transposed else "quantized::conv2d"
            params = ConvParams(weight, bias_value, stride, padding, dilation, groups,
                                bool(transposed), tuple(output_padding))
        else:
            stride, padding, output_padding, groups, dilation = constants
            kind, params = "quantized::conv_transpose2d", ConvParams(
                weight, bias_value, stride, padding, dilation, groups, True,
                tuple(output_padding))
        self._replace(node, kind, [x, _constant(params)], end)

    def _addmm_operands(self, node: Node) -> list[Value] | None:
        """(input, weight, bias) of ``addmm(bias, x, weight.permute(1, 0))`` with beta and
        alpha 1, a linear layer in the edge dialect; the permute, read by nothing else, goes."""
        bias, x, transposed = node.inputs[:3]
        scalars = [v.constant for v in node.inputs[3:5]]
        permute = self.producer.get(transposed)
        if any(c != 1 for c in scalars) or permute is None or permute.kind != "aten::permute" \
                or list(permute.inputs[1].constant or []) != [1, 0] \
                or self.readers.get(transposed) != [node]:
            return None
        weight = permute.inputs[0]
        if weight not in self.stored:
            return None
        self.removed.add(id(permute))
        return [x, weight, bias]

    def _binary(self, node: Node) -> None:
        a, b = (self._quantized_source(v) for v in node.inputs[:2])
        alpha = node.inputs[2].constant if len(node.inputs) > 2 else 1
        if a is None or b is None or alpha != 1:
            return
        end = self._output_quantize(node)
        if end is not None:
            self._replace(node, _BINARY[node.kind], [a, b], end)

    def _cat(self, node: Node) -> None:
        items = node.inputs[0]
        build = self.producer.get(items)
        if build is None or build.kind != "prim::ListConstruct" or \
                self.readers.get(items) != [node]:
            return
        found = [self._quantized_source(v) for v in build.inputs]
        sources = [s for s in found if s is not None]
        end = self._output_quantize(node, activations=False)
        if end is None or len(sources) != len(found) or \
                {self.dtypes[s] for s in sources} != {self.dtypes[end[0].outputs[0]]}:
            return
        build.inputs = sources
        self._replace(node, "quantized::cat", [items, node.inputs[1]], end)

    def _fixed(self, node: Node) -> None:
        x = self._quantized_source(node.inputs[0])
        end = self._output_quantize(node, activations=False)
        if x is None or end is None:
            return
        out = end[0].outputs[0]
        scale, zero_point = self.quantized[out]
        expected = fixed_output(RULES[node.kind].nnapi, ACTIVATION_TYPES[self.dtypes[out]])
        if expected is None or self.dtypes[x] != self.dtypes[out] or not (
                math.isclose(scale, expected[0], rel_tol=1e-6) and zero_point == expected[1]):
            return
        kind = _FIXED[node.kind]
        if kind is None:  # the aten lowering takes the quantized input
            self._rewire(node, [x] + node.inputs[1:], end[0])
        else:
            self._replace(node, kind, [x], end)

    def _same(self, node: Node) -> None:
        x = self._quantized_source(node.inputs[0])
        end = self._output_quantize(node, activations=False)
        if x is None or end is None:
            return
        out = end[0].outputs[0]
        (scale, zero_point), (x_scale, x_zero_point) = self.quantized[out], self.quantized[x]
        if zero_point == x_zero_point and math.isclose(scale, x_scale, rel_tol=1e-6) \
                and self.dtypes[x] == self.dtypes[out]:
            self._rewire(node, [x] + node.inputs[1:], end[0])

    def _own(self, node: Node) -> None:
        x = self._quantized_source(node.inputs[0])
        end = self._output_quantize(node, activations=False)
        if x is not None and end is not None and self.dtypes[x] == self.dtypes[
                end[0].outputs[0]]:
            self._rewire(node, [x] + node.inputs[1:], end[0])

    # -------------------------------------------------------------- graph surgery

    def _quantized_source(self, v: Value) -> Value | None:
        """The quantized activation ``v`` dequantizes, if ``v`` is such a dequantize."""
        node = self.producer.get(v)
        if node is None or node.kind != "aten::dequantize":
            return None
        source = node.inputs[0]
        return source if source in self.quantized else None

    def _constant_source(self, v: Value) -> object:
        """A constant: stored weights as their integers, anything else as is."""
        if v in self.stored:
            return self.stored[v]
        return v.constant if v.is_constant else None

    def _output_quantize(self, node: Node, activations: bool = True
                         ) -> tuple[Node, Node | None] | None:
        """(quantize, activation) when the only reader of the output is a quantize, or an
        activation NNAPI fuses (ReLU, ReLU6) whose only reader is a quantize."""
        readers = self.readers.get(node.outputs[0], [])
        activation = None
        if activations and len(readers) == 1 and readers[0] is not None \
                and readers[0].kind in _ACTIVATIONS:
            activation = readers[0]
            readers = self.readers.get(activation.outputs[0], [])
        if len(readers) != 1 or readers[0] is None or readers[0].outputs[0] not in self.quantized:
            return None
        return readers[0], activation

    def _replace(self, node: Node, kind: str, inputs: list[Value],
                 end: tuple[Node, Node | None]) -> None:
        """``node`` becomes ``kind`` on quantized ``inputs``, quantized like ``end``'s
        quantize; an activation between them then runs on the quantized result."""
        quantize, activation = end
        scale, zero_point = self.quantized[quantize.outputs[0]]
        dtype = self.dtypes[quantize.outputs[0]]
        if any(self.dtypes.get(v, dtype) != dtype for v in _activations(inputs, self.producer)):
            return  # NNAPI's quantized operations take and give one 8-bit type
        inputs = inputs + [_constant(scale), _constant(zero_point)]
        if activation is None:
            self._rewire(node, inputs, quantize, kind)
            return
        middle = Value(node.outputs[0].name + ".q", "Tensor", "TensorType")
        ex = node.outputs[0].example
        if isinstance(ex, ExampleTensor):
            middle.example = ExampleTensor(ex.shape, dtype, scale, zero_point)
        self.quantized[middle], self.dtypes[middle] = (scale, zero_point), dtype
        node.kind, node.schema, node.inputs, node.outputs = kind, "", inputs, [middle]
        self._rewire(activation, [middle] + activation.inputs[1:], quantize)

    def _rewire(self, node: Node, inputs: list[Value], quantize: Node,
                kind: str | None = None) -> None:
        """``node`` reads ``inputs`` and writes the quantize's output; the quantize goes."""
        if kind is not None:
            node.kind, node.schema = kind, ""
        node.inputs = inputs
        node.outputs = list(quantize.outputs)
        for v in node.outputs:
            self.producer[v] = node
        self.removed.add(id(quantize))

    def _drop_unread_dequantizes(self) -> None:
        read = {v for n in self.graph.walk() if id(n) not in self.removed for v in n.inputs}
        read.add(self.graph.output)
        for n in self.graph.nodes:
            if n.kind == "aten::dequantize" and n.outputs[0] not in read:
                self.removed.add(id(n))


def _activations(inputs: list[Value], producer: dict[Value, Node]) -> list[Value]:
    """The quantized activations among a pattern's inputs (a cat's list: its items)."""
    found = []
    for v in inputs:
        build = producer.get(v)
        found += build.inputs if build is not None and build.kind == "prim::ListConstruct" \
            else [v]
    return found


def _quant_params(quantize: Node) -> tuple[float, int]:
    return float(_number(quantize.inputs[1].constant)), int(_number(quantize.inputs[2].constant))


def _number(v: torch.Tensor | float) -> float:
    """A scalar constant (a number, or a tensor of one element) as a Python number."""
    return v.item() if isinstance(v, torch.Tensor) else v


def _dtype_name(v: object) -> str:
    code = v.constant if isinstance(v, Value) else v
    return DTYPE_OF_CODE.get(code, str(code)) if isinstance(code, int) else str(code)


def _is_none(v: Value) -> bool:
    return v.is_constant and v.constant is None


def _constant(value: object) -> Value:
    return Value("qdq", type(value).__name__, "", constant=value)


def _stored_weight(node: Node) -> StoredWeight:
    """A dequantize of stored integers: the integers with their parameters."""
    values = [v.constant for v in node.inputs]
    if node.kind.endswith("per_channel"):
        stored, scales, zero_points, axis = values[:4]
        return StoredWeight(stored, torch.as_tensor(scales), torch.as_tensor(zero_points),
                            int(axis))
    stored, scale, zero_point = values[:3]
    return StoredWeight(stored, float(_number(scale)), int(_number(zero_point)))


def _as_quantized(v: Value, scale: float, zero_point: int, dtype: str) -> None:
    """The output of a quantize is a quantized tensor for the converter (PT2E's holds the
    integers; ``Value.tensor`` keeps them, compared in quanta)."""
    if isinstance(v.example, ExampleTensor):
        v.example = ExampleTensor(v.example.shape, dtype, scale, zero_point)
