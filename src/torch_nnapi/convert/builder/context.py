"""The converter state that lowerings build the NNAPI model through.

Every operand and operation goes through the layer-1 :class:`~torch_nnapi.nnapi.Model`, so
each emitted operation is checked against its declared signature as it is added. This class
adds what a PyTorch converter needs on top: operands from PyTorch shapes and layouts,
deduplicated scalar and constant operands, sizes that depend on flexible input dimensions
(recorded for load-time patching), and the layout conversions of ``layout.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

import numpy as np
import numpy.typing as npt
import torch

from ...nnapi.codes import (
    MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES,
    FeatureLevel,
    OperandType,
    OperationType,
)
from ...nnapi.model import Model, Operation
from ...nnapi.operand_types import type_info
from ...nnapi.signatures import signature_of
from ..capture.graph import ExampleTensor
from ..errors import ConverterBug, Unsupported
from . import layout as lay
from .binding import Named, Slot, bind, trimmed_length
from .called import CalledLowering, registered_called_lowering
from .merged import default_groups, is_one, reshape_merged, same_dim, transpose_merged
from .symbolic import Sym, SymInt, hint
from .values import NNAPI_TYPE_OF, QUANT_DTYPES, TensorValue, dtype_name

if TYPE_CHECKING:
    from ..capture.graph import Node, Value

Op = OperationType

_SMALL_CONSTANT_BYTES = 4096  # constants up to this size are deduplicated by content


@dataclass(frozen=True)
class ScalarInput:
    """A scalar input of an operation being built; it becomes a (deduplicated) model
    operand only if the operation keeps it, so dropped defaults leave nothing behind."""

    type: OperandType
    value: bool | int | float | Sym  # an INT32 may be a Sym resolved at load time


OperandRef = int | TensorValue | ScalarInput

# A node input as the lowering driver resolves it (lowerings/__init__.py): a tensor the model
# computes, a constant tensor, a number or a size known at load time (Sym), a string (a
# device, a padding mode), None, or a list or tuple of those; what a lowering returns is one
# of these too. (The quantized lowerings' packed parameters have types of their own.)
Arg: TypeAlias = ("TensorValue | torch.Tensor | Sym | int | float | bool | str | None"
                  " | Sequence[Arg]")
Number = bool | int | float | Sym


def is_number(v: object) -> TypeGuard[Number]:
    return isinstance(v, (bool, int, float, Sym)) and not isinstance(v, np.ndarray)


class Converter:
    """Builds one NNAPI model; lowerings receive it as ``cx``.

    ``target_level`` is the highest NNAPI feature level the model may need (None: as low as
    possible); lowerings use an operation of a higher level than their default form when
    ``allows`` its level (e.g. HARD_SWISH at level 4). ``per_channel_weights``: whether the
    back-end's format carries per-channel quantized weights (TENSOR_QUANT8_SYMM_PER_CHANNEL;
    see ``Lowerer.per_channel_weights``); without, a quantized layer with per-channel
    weights runs in float, counted in ``per_channel_in_float``.
    """

    def __init__(self, target_level: int | None = None, *, per_channel_weights: bool = False):
        self.model = Model()
        self.target_level = target_level
        self.per_channel_weights = per_channel_weights
        self.per_channel_in_float = 0  # layers whose per-channel weights the format cannot carry
        # operand -> NNAPI-order dimensions with Sym entries (only operands that have some)
        self.sym_dims: dict[int, tuple[SymInt, ...]] = {}
        # operand -> flat INT32 values with Sym entries (constants patched at load time)
        self.sym_values: dict[int, tuple[SymInt, ...]] = {}
        # (expression, expected value, message): checked by the wrapper at load time
        self.guards: list[tuple[SymInt, int, str]] = []
        self.node: Node | None = None  # the node being lowered (set by the lowering driver)
        # Set by the lowering driver: each graph value's readers in program order, and how
        # many graph values are bound to each operand (aliases made by permute & co.).
        self.users: dict[Value, list[Node | None]] = {}
        self.operand_refs: dict[int, int] = {}
        self._producers: dict[int, int] = {}  # operand -> index of the operation writing it
        self._fuse_code_inputs: dict[int, int] = {}  # operation -> position of its fuse_code
        # operand -> the capture.Node whose lowering emitted the operation writing it (None:
        # emitted for the model's outputs). Keyed by operand, not operation index, because
        # Model.finish reorders operations; tools use it to name the PyTorch code behind an
        # NNAPI operation.
        self.origins: dict[int, Node | None] = {}
        # operand -> the activation node fused into the operation writing it: the value
        # before the activation exists in PyTorch but not in the NNAPI model.
        self.fused_activations: dict[int, Node] = {}
        # (type, value) of scalars, (type, values, shape) of integer tensors -> operand
        self._scalars: dict[tuple[object, ...], int] = {}
        self._constants: dict[tuple[object, ...], TensorValue] = {}
        # (operand, NNAPI dims) -> the operand a RESHAPE made of it (merged views, reused)
        self.regrouped: dict[tuple[int, tuple[SymInt, ...]], int] = {}
        # Set by the lowering driver: lowers a graph module an IF or WHILE calls (called.py)
        self.lower_called: CalledLowering | None = registered_called_lowering()

    @property
    def current_node(self) -> Node:
        """The node being lowered, for lowerings that read its kind, schema or outputs; a
        lowering called outside the lowering driver has none."""
        if self.node is None:
            raise ConverterBug("a lowering asked for the node being lowered, but none is")
        return self.node

    def allows(self, level: int, *tensors: TensorValue) -> bool:
        """Whether a lowering may use an operation (or form) of feature level ``level``
        instead of its lower-level composition: only up to an explicit ``target_level``, or
        when one of ``tensors`` already needs that level (a signed 8-bit tensor: level 4)."""
        if self.target_level is not None:
            return self.target_level >= level
        return any(int(type_info(t.nnapi_type).feature_level) >= level for t in tensors)

    # ------------------------------------------------------------------ tensor operands

    def new_tensor(self, shape: Sequence[SymInt], dtype: str,
                   layout: lay.Layout | None = None, scale: float = 0.0,
                   zero_point: int = 0, groups: Sequence[int] = ()) -> TensorValue:
        """A fresh tensor operand with PyTorch shape ``shape`` stored in ``layout``, its
        NNAPI dimensions merging the runs ``groups`` of that order (layout.py); a tensor of
        rank above 4 without ``groups`` gets :func:`default_groups`."""
        shape = tuple(shape)
        layout = tuple(layout) if layout is not None else lay.identity(len(shape))
        if len(layout) != len(shape):
            raise ValueError(f"layout {layout} does not fit rank {len(shape)}")
        for d in shape:
            if not isinstance(d, Sym) and int(d) <= 0:
                raise Unsupported(f"tensors with a dimension of size {d} cannot be expressed"
                                  " in NNAPI")
        if not groups and len(shape) > 4:
            groups = default_groups(lay.apply(layout, shape))
        groups = lay.normalize_groups(groups, len(shape)) if groups else ()
        nshape = lay.merged_shape(layout, groups, shape) if groups else lay.apply(layout, shape)
        if len(nshape) > 4:
            raise Unsupported(f"NNAPI tensors have at most 4 dimensions, this one would have"
                              f" shape {[hint(d) for d in nshape]}")
        if dtype not in NNAPI_TYPE_OF:
            raise Unsupported(f"dtype {dtype} has no NNAPI equivalent")
        dims = tuple(0 if isinstance(d, Sym) else int(d) for d in nshape)
        index = self.model.add_operand(NNAPI_TYPE_OF[dtype], dims, scale, zero_point)
        if any(isinstance(d, Sym) for d in nshape):
            self.sym_dims[index] = tuple(nshape)
        return TensorValue(index, shape, dtype, layout, float(scale), int(zero_point), groups)

    def constant(self, array: npt.ArrayLike, dtype: str, *, scale: float = 0.0,
                 zero_point: int = 0,
                 layout: lay.Layout | None = None, nnapi_type: OperandType | None = None,
                 groups: Sequence[int] = (), channel_scales: Sequence[float] = (),
                 channel_dim: int = 0) -> TensorValue:
        """A constant tensor operand from ``array`` (PyTorch order), stored in ``layout``
        (its dimensions merging the runs ``groups`` of that order); ``channel_scales``: the
        per-channel scales along stored dimension ``channel_dim`` of a
        TENSOR_QUANT8_SYMM_PER_CHANNEL constant."""
        array = np.asarray(array)
        shape = tuple(array.shape)
        layout = tuple(layout) if layout is not None else lay.identity(len(shape))
        if not groups and len(shape) > 4:
            groups = default_groups(lay.apply(layout, shape))
        groups = lay.normalize_groups(groups, len(shape)) if groups else ()
        stored = np.ascontiguousarray(np.transpose(array, layout) if shape else array.reshape(1))
        if groups:
            stored = stored.reshape(lay.merged_shape(layout, groups, shape))
        op_type = nnapi_type if nnapi_type is not None else NNAPI_TYPE_OF[dtype]
        stored = stored.astype(_np_dtype(op_type), copy=False)
        key = None
        if stored.nbytes <= _SMALL_CONSTANT_BYTES:
            key = (op_type, dtype, shape, float(scale), int(zero_point), layout, groups,
                   tuple(channel_scales), channel_dim,
                   hashlib.sha1(stored.tobytes()).hexdigest())
            found = self._constants.get(key)
            if found is not None:
                return found
        index = self.model.add_operand(op_type, stored.shape, scale, zero_point)
        if channel_scales:
            self.model.set_operand_symm_per_channel_quant_params(index, channel_scales,
                                                                 channel_dim)
        self.model.set_operand_value(index, stored, copy=False)
        value = TensorValue(index, shape, dtype, layout, float(scale), int(zero_point), groups)
        if key is not None:
            self._constants[key] = value
        return value

    def torch_constant(self, t: torch.Tensor, dtype: str | None = None,
                       layout: lay.Layout | None = None, groups: Sequence[int] = ()
                       ) -> TensorValue:
        """A constant operand holding a PyTorch tensor (converted to ``dtype`` if given)."""
        if t.is_quantized:
            if t.qscheme() not in (torch.per_tensor_affine, torch.per_tensor_symmetric) \
                    or t.dtype != torch.quint8:
                raise Unsupported(f"constant quantized tensors of type {t.dtype} with"
                                  f" {t.qscheme()} are not supported here")
            return self.constant(t.int_repr().numpy(), "quint8", scale=t.q_scale(),
                                 zero_point=t.q_zero_point(), layout=layout, groups=groups)
        target = dtype or _constant_dtype(t)
        array = t.detach().to(_torch_dtype(target)).contiguous().numpy()
        if target == "int64":
            if array.size and (array.min() < -2**31 or array.max() >= 2**31):
                raise Unsupported("an int64 constant does not fit NNAPI's int32")
            array = array.astype(np.int32)
        return self.constant(array, target, layout=layout, groups=groups)

    # The value types FILL makes, and the scalar type of its value for each.
    _FILL_VALUES = {"float32": OperandType.FLOAT32, "float16": OperandType.FLOAT16,
                    "int32": OperandType.INT32, "int64": OperandType.INT32}

    def _fill(self, t: torch.Tensor, dtype: str | None, layout: lay.Layout | None,
              groups: Sequence[int] = ()) -> TensorValue | None:
        """A FILL (feature level 4, when allowed) in place of a constant that is large (more
        than NNAPI copies into a model, MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES bytes) and holds
        one value: the model then carries a shape and the value instead of every element.
        None when a constant it stays."""
        if not self.allows(FeatureLevel.ANDROID_11) or t.is_quantized or t.dim() == 0:
            return None
        target = dtype or _constant_dtype(t)
        scalar_type = self._FILL_VALUES.get(target)
        element_size = 2 if target == "float16" else 4  # int64 is int32 in NNAPI
        if scalar_type is None or \
                t.numel() * element_size <= MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES:
            return None
        flat = t.detach().reshape(-1)
        if not bool((flat == flat[0]).all()):
            return None
        value = flat[0].item()
        if scalar_type == OperandType.INT32:
            if not -2**31 <= int(value) < 2**31:
                return None
            value = int(value)
        out = self.new_tensor(tuple(t.shape), target, layout, groups=groups)
        shape = self.int_vector(self.model.operands[out.operand].dimensions)
        self.operation(Op.FILL, dict(shape=shape, value=self.scalar(scalar_type, value)),
                       {"output": out})
        return out

    # ------------------------------------------------------------------ scalar operands

    def scalar(self, op_type: OperandType, value: Number) -> ScalarInput:
        """A scalar input (INT32, FLOAT32, BOOL...; an INT32 may be a Sym), added to the
        model when an operation keeps it: trailing inputs at their defaults are dropped."""
        if isinstance(value, Sym):
            if op_type != OperandType.INT32:
                raise Unsupported(f"a flexible dimension cannot be used as a {op_type.name}")
        elif op_type == OperandType.FLOAT32:
            value = float(np.float32(value))
        return ScalarInput(op_type, value)

    def _scalar_operand(self, s: ScalarInput) -> int:
        if isinstance(s.value, Sym):
            index = self.model.add_scalar(s.type, s.value.hint)
            self.sym_values[index] = (s.value,)
            return index
        key = (s.type, s.value)
        found = self._scalars.get(key)
        if found is None:
            found = self.model.add_scalar(s.type, s.value)
            self._scalars[key] = found
        return found

    def i32(self, value: SymInt) -> ScalarInput:
        return self.scalar(OperandType.INT32, value if isinstance(value, Sym) else int(value))

    def f32(self, value: float) -> ScalarInput:
        return self.scalar(OperandType.FLOAT32, float(value))

    def f16(self, value: float) -> ScalarInput:
        return self.scalar(OperandType.FLOAT16, float(value))

    def float_scalar(self, value: float, like: TensorValue) -> ScalarInput:
        """A FLOAT32 or FLOAT16 scalar, matching a float16 tensor where needed."""
        return self.f16(value) if like.dtype == "float16" else self.f32(value)

    def boolean(self, value: bool) -> ScalarInput:
        return self.scalar(OperandType.BOOL, bool(value))

    def int_vector(self, values: Iterable[SymInt]) -> int:
        """A constant TENSOR_INT32 vector; Sym entries are patched at load time."""
        values = tuple(values)
        return self.int_tensor(values, (len(values),))

    def int_tensor(self, values: Iterable[SymInt], shape: Sequence[int]) -> int:
        """A constant TENSOR_INT32 of ``shape`` holding ``values`` (flat, row-major); Sym
        entries are patched at load time (PAD's paddings of flexible amounts)."""
        values, shape = tuple(values), tuple(int(n) for n in shape)
        if any(isinstance(v, Sym) for v in values):
            index = self.model.add_constant(
                OperandType.TENSOR_INT32,
                np.array([hint(v) for v in values], np.int32).reshape(shape))
            self.sym_values[index] = values
            return index
        key = (OperandType.TENSOR_INT32, values, shape)
        found = self._scalars.get(key)
        if found is None:
            found = self.model.add_constant(OperandType.TENSOR_INT32,
                                            np.array(values, np.int32).reshape(shape))
            self._scalars[key] = found
        return found

    def guard(self, expression: SymInt, expected: int, message: str) -> None:
        """Requires ``expression == expected`` for the real input shapes (checked at load)."""
        if isinstance(expression, Sym):
            self.guards.append((expression, int(expected), message))
        elif int(expression) != int(expected):
            raise Unsupported(message)

    # ------------------------------------------------------------------ operations

    def operation(self, op: OperationType, inputs: Named[OperandRef],
                  outputs: Named[TensorValue]) -> None:
        """Adds an operation whose inputs and outputs are given by the names its signature
        declares (``binding.py``), without trailing optional inputs at their defaults."""
        try:
            signature = signature_of(op)
            bound_in, bound_out = bind(signature, inputs, outputs)
        except (ConverterBug, NotImplementedError) as e:
            where = f"{self.node.kind} at {self.node.location}: " if self.node else ""
            raise ConverterBug(f"{where}{e}") from None
        out_values = bound_out.values
        out_types = [self.model.operands[o.operand].type for o in out_values]
        first = bound_in.values[0]
        rank = 0 if isinstance(first, ScalarInput) \
            else len(self.model.operands[_index(first)].dimensions)
        slots = [self._slot(x) for x in bound_in.values]
        keep = trimmed_length(signature, bound_in, slots, out_types, rank)
        index = self.model.add_operation(
            op, [self._operand_of(x) for x in bound_in.values[:keep]],
            [o.operand for o in out_values])
        fuse_code_at = bound_in.position_of("fuse_code")
        if fuse_code_at is not None:
            self._fuse_code_inputs[index] = fuse_code_at
        for o in out_values:
            self._producers[o.operand] = index
            self.origins[o.operand] = self.node

    def _slot(self, x: OperandRef) -> Slot:
        if isinstance(x, ScalarInput):
            return Slot(x.type, None if isinstance(x.value, Sym) else x.value)
        operand = self.model.operands[_index(x)]
        value = operand.value
        if value is None or not operand.is_scalar or _index(x) in self.sym_values:
            return Slot(operand.type)
        return Slot(operand.type, np.asarray(value).reshape(()).item())

    def _operand_of(self, x: OperandRef) -> int:
        return self._scalar_operand(x) if isinstance(x, ScalarInput) else _index(x)

    def fuse_activation(self, t: TensorValue, code: int) -> TensorValue | None:
        """Folds RELU/RELU1/RELU6 into the operation that computed ``t`` (through its
        fuse-code input) when nothing else reads ``t``; None when that is not possible."""
        node = self.node
        if node is None or not node.inputs or t.nnapi_type == OperandType.TENSOR_INT32:
            return None  # (integer arithmetic takes no activation)
        readers = self.users.get(node.inputs[0], [])
        in_place = node.kind.endswith("_") and not node.kind.endswith("__")
        alone = readers[:1] == [node] if in_place else readers == [node]
        if not alone or self.operand_refs.get(t.operand, 0) != 1:
            return None
        index = self._producers.get(t.operand)
        if index is None:
            return None
        operation = self.model.operations[index]
        position = self._fuse_code_inputs.get(index)
        if position is None:
            return None
        fuse_code = self.model.operands[operation.inputs[position]].value
        if fuse_code is None or int(fuse_code) != 0:
            return None
        inputs = list(operation.inputs)
        inputs[position] = self._scalar_operand(self.i32(code))
        self.model.operations[index] = Operation(operation.type, tuple(inputs),
                                                 operation.outputs)
        self.fused_activations[t.operand] = node
        return t

    def emit(self, op: OperationType, inputs: Named[OperandRef], shape: Sequence[SymInt],
             dtype: str, layout: lay.Layout | None = None, scale: float = 0.0,
             zero_point: int = 0, groups: Sequence[int] = ()) -> TensorValue:
        """Adds an operation with one output (named ``output``) and returns that output."""
        out = self.new_tensor(shape, dtype, layout, scale, zero_point, groups)
        self.operation(op, inputs, {"output": out})
        return out

    def emit_like(self, op: OperationType, inputs: Named[OperandRef],
                  like: TensorValue, shape: Sequence[SymInt] | None = None) -> TensorValue:
        """One-output operation whose output has ``like``'s dtype, layout and quantization
        (and merged dimensions, when the shape is the same)."""
        same = shape is None or tuple(shape) == tuple(like.shape)
        return self.emit(op, inputs, like.shape if shape is None else shape, like.dtype,
                         like.layout, like.scale, like.zero_point,
                         like.groups if same else ())

    def example(self, output: int = 0) -> ExampleTensor | int | float | None:
        """PyTorch's example of the current node's output (shape, dtype, quantization; the
        value of a number), None where the model could not be run on the example inputs."""
        if self.node is None or output >= len(self.node.outputs):
            return None
        example: ExampleTensor | int | float | None = self.node.outputs[output].example
        return example

    def example_quant(self, output: int = 0) -> tuple[float, int]:
        """The (scale, zero point) PyTorch gave the current node's quantized output."""
        ex = self.example(output)
        if not isinstance(ex, ExampleTensor) or not ex.scale:
            raise Unsupported("the output quantization parameters are unknown (the model"
                              " could not be run on the example inputs)")
        return float(ex.scale), int(ex.zero_point)

    def example_quant_dtype(self, output: int = 0) -> str:
        """The 8-bit type PyTorch gave the current node's quantized output (quint8 unless
        the example says qint8)."""
        ex = self.example(output)
        dtype = ex.dtype if isinstance(ex, ExampleTensor) else ""
        return dtype if dtype in QUANT_DTYPES else "quint8"

    # ------------------------------------------------------------------ values

    def tensor(self, v: Arg, like: TensorValue | None = None, dtype: str | None = None,
               what: str = "operand") -> TensorValue:
        """An operand for ``v``: a TensorValue as is; a constant tensor or number made a
        constant operand (of ``like``'s dtype and layout, broadcast-ready)."""
        if isinstance(v, TensorValue):
            return v
        if isinstance(v, torch.Tensor):
            target = dtype or (like.dtype if like is not None and not like.is_quantized
                               else None)
            if like is not None and v.dim() < like.rank:
                v = v.reshape((1,) * (like.rank - v.dim()) + tuple(v.shape))
            layout, groups = ((like.layout, like.groups)
                              if like is not None and v.dim() == like.rank else (None, ()))
            filled = self._fill(v, target, layout, groups)
            return (filled if filled is not None
                    else self.torch_constant(v, target, layout, groups))
        if is_number(v):
            if isinstance(v, Sym):
                raise Unsupported(f"{what}: a flexible dimension used as a tensor value")
            target = dtype or (like.dtype if like is not None else
                               ("float32" if isinstance(v, float) else "int64"))
            rank = like.rank if like is not None else 1
            return self.constant(np.full((1,) * max(rank, 1), v), target,
                                 layout=like.layout if like is not None and like.rank else None,
                                 groups=like.groups if like is not None else ())
        raise Unsupported(f"{what} must be a tensor, got {type(v).__name__}")

    def to_layout(self, t: TensorValue, layout: lay.Layout) -> TensorValue:
        """``t`` with its data in ``layout``: a RESHAPE if only size-1 dims move, else a
        TRANSPOSE (several for tensors of rank above 4); nothing if it is already there."""
        layout = tuple(layout)
        if t.layout == layout or t.rank <= 1:
            return t
        if t.groups or t.rank > 4:
            return transpose_merged(self, t, layout)
        moved = [d for d in t.layout if not is_one(t.shape[d])]
        wanted = [d for d in layout if not is_one(t.shape[d])]
        if moved == wanted:
            out = self.new_tensor(t.shape, t.dtype, layout, t.scale, t.zero_point)
            self.operation(Op.RESHAPE, dict(input=t, shape=self.shape_vector(out.nnapi_shape)),
                           dict(output=out))
            return out
        if t.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
            return self.through_float(t, lambda f: self.to_layout(f, layout))
        perm = lay.transpose_perm(t.layout, layout)
        return self.emit(Op.TRANSPOSE, dict(input=t, perm=self.int_vector(perm)), t.shape,
                         t.dtype, layout, t.scale, t.zero_point)

    def contiguous(self, t: TensorValue) -> TensorValue:
        return self.to_layout(t, lay.identity(t.rank))

    def shape_vector(self, shape: Sequence[SymInt]) -> int:
        """A RESHAPE target: one flexible size becomes -1, several are patched at load."""
        syms = [d for d in shape if isinstance(d, Sym)]
        if len(syms) == 1:
            shape = [-1 if isinstance(d, Sym) else d for d in shape]
        return self.int_vector(shape)

    def reshape(self, t: TensorValue, shape: Sequence[SymInt]) -> TensorValue:
        """``t.reshape(shape)`` (PyTorch semantics); the result is contiguous. A result of
        rank above 4 reuses ``t``'s operand when its dimensions are runs of the new shape."""
        shape = tuple(shape)
        if t.groups or t.rank > 4 or len(shape) > 4:
            return reshape_merged(self, t, shape)
        if t.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
            return self._reshape_integers(t, shape)
        if not lay.data_order_matches(t.layout, t.shape):
            t = self.contiguous(t)
        if tuple(shape) == t.shape and lay.is_identity(t.layout):
            return t
        nshape = shape if shape else (1,)
        if shape and tuple(t.nnapi_shape) == tuple(nshape) and len(shape) == t.rank:
            return t.with_(shape=shape, layout=lay.identity(len(shape)))
        out = self.new_tensor(shape, t.dtype, None, t.scale, t.zero_point)
        self.operation(Op.RESHAPE, dict(input=t, shape=self.shape_vector(nshape)),
                       dict(output=out))
        return out

    def _reshape_integers(self, t: TensorValue, shape: tuple[SymInt, ...]) -> TensorValue:
        """RESHAPE takes no integer tensors at level 3: EXPAND_DIMS where only size-1
        dimensions are added, else a round trip through float32 (exact below 2**24, which
        covers indices). A 0-D value also goes through float32: the operation that made it
        gives [] on Android 10 but [1] on Android 11, which EXPAND_DIMS would grow apart."""
        if lay.is_identity(t.layout) and t.rank > 0 and t.dtype != "bool":  # (EXPAND_DIMS
            inserted, k = [], 0                                               # takes no bool)
            for i, d in enumerate(shape):
                if k < t.rank and same_dim(t.shape[k], d):
                    k += 1
                elif is_one(d):
                    inserted.append(i)
                else:
                    break
            else:
                if k == t.rank:
                    out = t
                    for i in inserted:
                        new_shape = out.shape[:i] + (1,) + out.shape[i:]
                        out = self.emit(Op.EXPAND_DIMS, dict(input=out, axis=self.i32(i)),
                                        new_shape, t.dtype)
                    return out
        return self.through_float(t, lambda f: self.reshape(f, shape))

    def through_float(self, t: TensorValue,
                      move: Callable[[TensorValue], TensorValue]) -> TensorValue:
        """``move`` (a data movement: RESHAPE, TRANSPOSE, STRIDED_SLICE, which take no
        TENSOR_INT32 or TENSOR_BOOL8 operands at the levels converted for) applied to ``t``
        as float32 and brought back: integers by CAST (exact below 2**24, which covers
        indices, positions and token ids), bools as 1.0 / 0.0 (SELECT) compared back with
        GREATER 0.5."""
        if t.dtype != "bool":
            return self.cast(move(self.cast(t, "float32")), t.dtype)
        if any(isinstance(n, Sym) for n in t.nnapi_shape):
            raise Unsupported("moving the data of a bool tensor of flexible size (NNAPI"
                              " takes no bool tensor in RESHAPE, TRANSPOSE or STRIDED_SLICE)")
        full = [int(n) for n in t.nnapi_shape] or [1]
        ones, zeros = (self.constant(np.full(full, v, np.float32), "float32",
                                     nnapi_type=OperandType.TENSOR_FLOAT32)
                       for v in (1.0, 0.0))
        as_float = self.emit(Op.SELECT, dict(condition=t, input1=ones, input2=zeros),
                             t.shape, "float32", t.layout, groups=t.groups)
        moved = move(as_float)
        half = self.constant(np.full([1], 0.5, np.float32), "float32")
        return self.emit(Op.GREATER, dict(input0=moved, input1=half), moved.shape, "bool",
                         moved.layout, groups=moved.groups)

    def cast(self, t: TensorValue, dtype: str) -> TensorValue:
        if t.dtype == dtype or NNAPI_TYPE_OF[t.dtype] == NNAPI_TYPE_OF[dtype]:
            return t.with_(dtype=dtype) if t.dtype != dtype else t
        return self.emit(Op.CAST, dict(input=t), t.shape, dtype, t.layout, groups=t.groups)


def _index(x: int | TensorValue) -> int:
    return x.operand if isinstance(x, TensorValue) else int(x)


def _np_dtype(op_type: OperandType) -> np.dtype:
    return type_info(op_type).dtype


_TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "int32": torch.int32,
    "int64": torch.int64, "bool": torch.bool, "float64": torch.float64,
}


def _torch_dtype(name: str) -> torch.dtype:
    return _TORCH_DTYPES[name]


def _constant_dtype(t: torch.Tensor) -> str:
    name = dtype_name(t.dtype)
    if name == "float64":
        return "float32"
    if name in ("int8", "int16", "uint8"):
        return "int32"
    if name not in NNAPI_TYPE_OF:
        raise Unsupported(f"constant tensors of dtype {name} have no NNAPI equivalent")
    return name
