"""Group fusions of float32 element-wise operations (fused_f32.c): a chain such as GELU (some
twenty ADD, MUL, DIV, ABS, NEG and EXP operations), a composed layer norm (MEAN, SUB, MUL,
MEAN, ADD, RSQRT, MUL, MUL, ADD) or a residual block's layer scale computed in one pass over
its result, without writing a tensor per operation.

Members: ADD, SUB, MUL, DIV (with their fused activations), MAXIMUM, MINIMUM, NEG, ABS, EXP,
SQRT, RSQRT, LOGISTIC, TANH, RELU, RELU1, RELU6 on float32, and MEAN, REDUCE_SUM,
REDUCE_MAX, REDUCE_MIN over the last axis keeping it (a row's reduction). Each becomes one or
two instructions computing exactly what its reference kernel computes, in the same order and
float32 roundings (runtime/native/fused.h); exp, tanh and logistic agree within a few ulp,
sums within float32 rounding of their order.

The plan sees the group's tensors broadcast to one iteration space, whose last dimension is
the row: every input and every intermediate result either runs along it or holds one value per
row. Outer dimensions along which every input runs alike are merged; without reductions the
rows are merged too where the inputs allow it, and cut into chunks that stay in the cache.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.model import Operation
from ..context import KernelContext
from ..ops.reduction import reduce_plan
from ..quant import activation_range_float
from ..registry import GroupPlan, register_group_member, register_group_planner
from . import fused_patterns, module
from .planning import constant_parameters

_F32 = OperandType.TENSOR_FLOAT32
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# The opcodes of fused.h.
_BINARY = {Op.ADD: 0, Op.SUB: 1, Op.MUL: 2, Op.DIV: 3, Op.MAXIMUM: 4, Op.MINIMUM: 5}
_UNARY = {Op.NEG: 6, Op.ABS: 7, Op.EXP: 8, Op.TANH: 9, Op.LOGISTIC: 10, Op.SQRT: 11,
          Op.RSQRT: 12}
_CLIP, _RELU = 13, 14
_RELU_BOUNDS = {Op.RELU: (0.0, _FLOAT32_MAX), Op.RELU1: (-1.0, 1.0), Op.RELU6: (0.0, 6.0)}
_REDUCTIONS = {Op.REDUCE_SUM: 15, Op.MEAN: 16, Op.REDUCE_MAX: 17, Op.REDUCE_MIN: 18}
_ARITHMETIC = (Op.ADD, Op.SUB, Op.MUL, Op.DIV)
# Chains recognised whole (fused_patterns.py); the normalization needs whole rows.
_RECOGNISED = {"gelu_erf": 19, "gelu_tanh": 20, "normalize": 21}
_NORMALIZE, _NORMALIZE_AFFINE = _RECOGNISED["normalize"], 22
# Elements a register holds without reductions (a chunk of a row: 2 KB, in the L1 cache).
CHUNK = 512
# The longest row a group with reductions keeps in its registers.
LONGEST_ROW = 1 << 16
MAX_OUTER = 6


@register_group_member(*_BINARY, *_UNARY, *_RELU_BOUNDS, *_REDUCTIONS)
def member(ctx: KernelContext) -> bool:
    """Float32, with constant parameters; reductions over the last axis only, kept."""
    if ctx.input_type("input0" if ctx.operation in _BINARY else "input") != _F32:
        return False
    if ctx.operation in _BINARY:
        return constant_parameters(ctx, "input0", "input1")
    if ctx.operation not in _REDUCTIONS:
        return True
    if not constant_parameters(ctx):
        return False
    axes, keep, _ = reduce_plan(ctx)
    rank = len(ctx.input_shape("input"))
    return rank > 0 and axes == (rank - 1,) and keep


@dataclass
class _Node:
    """One operation (or a recognised chain) as instructions: its opcode, data operands,
    bounds, result, constants."""

    kind: Op
    opcode: int
    operands: tuple[int, ...]
    result: int
    shape: tuple[int, ...]
    clamp: tuple[float, float] | None = None  # a fused activation after it
    constants: tuple[float, ...] = ()


def _node(operation: Operation, ctx: KernelContext) -> _Node:
    op = operation.type
    inputs, result = operation.inputs, operation.outputs[0]
    if op in _BINARY:
        a, b = ctx.input_shape("input0"), ctx.input_shape("input1")
        shape = tuple(np.broadcast_shapes(a, b))
        node = _Node(op, _BINARY[op], (inputs[0], inputs[1]), result, shape)
        if op in _ARITHMETIC:
            lo, hi = activation_range_float(ctx.scalar("fuse_code"))
            if lo != -np.inf or hi != np.inf:
                node.clamp = (lo, hi)
        return node
    shape = tuple(ctx.input_shape("input"))
    if op in _REDUCTIONS:
        return _Node(op, _REDUCTIONS[op], (inputs[0],), result, (*shape[:-1], 1))
    if op in _RELU_BOUNDS:
        return _Node(op, _RELU, (inputs[0],), result, shape, _RELU_BOUNDS[op])
    return _Node(op, _UNARY[op], (inputs[0],), result, shape)


@dataclass
class _Space:
    """The iteration space: the operands' shapes padded to one rank, the shape they broadcast
    to, whether rows are whole (reductions), and, once laid out, the dimension the row ends
    with."""

    shapes: dict[int, tuple[int, ...]]
    shape: tuple[int, ...]
    reduces: bool
    row_dim: int = -1

    def is_vector(self, operand: int) -> bool:
        """Whether an operand's values run along the row (else: one per row)."""
        size = self.shape[self.row_dim]
        return size > 1 and self.shapes[operand][self.row_dim] == size


def _space(nodes: list[_Node], shape_of: dict[int, tuple[int, ...]]) -> _Space | None:
    """The space every operand broadcasts to, or None when they do not share one (a
    reduction's row unlike the others) or the result does not cover it."""
    rank = max(len(s) for s in shape_of.values())
    padded = {o: (1,) * (rank - len(s)) + tuple(s) for o, s in shape_of.items()}
    full = [1] * rank
    for shape in padded.values():
        for d, size in enumerate(shape):
            if size != 1:
                if full[d] not in (1, size):
                    return None
                full[d] = size
    reduces = any(n.opcode in (*_REDUCTIONS.values(), _NORMALIZE, _NORMALIZE_AFFINE)
                  for n in nodes)
    space = _Space(padded, tuple(full), reduces)
    result = padded[nodes[-1].result]
    if result[:-1] != space.shape[:-1] or result[-1] not in (1, space.shape[-1]) or \
            0 in space.shape or (reduces and space.shape[-1] > LONGEST_ROW):
        return None
    return space


def _strides(shape: tuple[int, ...]) -> list[int]:
    """C-order element strides, 0 along dimensions of size 1 (broadcast)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step if size != 1 else 0)
        step *= size
    return strides[::-1]


def _layout(space: _Space, inputs: list[int]) -> tuple[list[int], int, list[list[int]]] | None:
    """(outer sizes, row length, each input's outer strides): the dimensions of more than one
    element, merged where every input runs alike along neighbours; with reductions the row
    is the last dimension alone. Sets ``space.row_dim``."""
    last = len(space.shape) - 1
    dims = [d for d in range(last + 1) if space.shape[d] != 1]
    if space.reduces or not dims:
        dims = [d for d in dims if d != last] + [last]
    strides = {o: _strides(space.shapes[o]) for o in inputs}
    merged: list[list[int]] = []  # runs of dimensions
    for d in dims:
        if merged and not (space.reduces and d == last):
            before = merged[-1][-1]
            if all(strides[o][before] == strides[o][d] * space.shape[d] for o in inputs):
                merged[-1].append(d)
                continue
        merged.append([d])
    if len(merged) - 1 > MAX_OUTER:
        return None
    space.row_dim = merged[-1][-1]
    sizes = [math.prod(space.shape[d] for d in run) for run in merged]
    outer_strides = [[strides[o][run[-1]] for run in merged[:-1]] for o in inputs]
    return sizes[:-1], sizes[-1], outer_strides


@register_group_planner
def plan_group(members: Sequence[tuple[Operation, KernelContext]]) -> GroupPlan | None:
    nodes = [_node(operation, ctx) for operation, ctx in members]
    where: dict[int, tuple[KernelContext, str]] = {}  # operand -> where a member reads it
    for (_, ctx), node in zip(members, nodes, strict=True):
        names = ("input0", "input1") if len(node.operands) == 2 else ("input",)
        for name, operand in zip(names, node.operands, strict=True):
            where.setdefault(operand, (ctx, name))
    recognised = _recognised(nodes, where)
    plan = _plan(members[-1][1], recognised, where) if recognised is not None else None
    return plan or _plan(members[-1][1], nodes, where)


def _recognised(nodes: list[_Node],
                where: dict[int, tuple[KernelContext, str]]) -> list[_Node] | None:
    """``nodes`` with each chain fused_patterns recognises as one node, None when none is."""
    produced = {n.result for n in nodes}

    def constant(operand: int) -> float | None:
        ctx, name = where[operand]
        if operand in produced or name in ctx.variable_inputs or \
                math.prod(ctx.input_shape(name)) != 1:
            return None
        return float(np.asarray(ctx.input(name), np.float32).reshape(-1)[0])

    shapes = {n.result: n.shape for n in nodes}
    shapes.update((o, tuple(ctx.input_shape(name))) for o, (ctx, name) in where.items())
    matches = [m for m in fused_patterns.find(nodes, constant, nodes[-1].result)
               if _unpadded(shapes[m.source]) == _unpadded(nodes[m.root].shape)]
    if not matches:
        return None
    replaced = {m.root: m for m in matches}
    covered = set().union(*(m.covered for m in matches))
    result: list[_Node] = []
    for k, node in enumerate(nodes):
        match = replaced.get(k)
        if match is not None:
            result.append(_Node(node.kind, _RECOGNISED[match.name], (match.source,),
                                node.result, node.shape, constants=match.constants))
        elif k not in covered:
            result.append(node)
    return _with_affine(result, shapes)


def _with_affine(nodes: list[_Node], shapes: dict[int, tuple[int, ...]]) -> list[_Node]:
    """Each normalization read by a MUL alone, whose result an ADD alone reads, the other
    operands of both rows (a layer norm's weight and bias), as one normalization that
    applies them in its last pass."""
    readers: dict[int, list[int]] = {}
    for k, node in enumerate(nodes):
        for operand in node.operands:
            readers.setdefault(operand, []).append(k)

    def only_reader(k: int, kind: Op) -> tuple[int, int] | None:
        """(the index of the one reader of nodes[k], its other operand) when it fits."""
        found = readers.get(nodes[k].result, [])
        if len(found) != 1 or k == len(nodes) - 1:
            return None
        reader = nodes[found[0]]
        if reader.kind != kind or reader.clamp is not None or len(set(reader.operands)) != 2:
            return None
        other = next(o for o in reader.operands if o != nodes[k].result)
        row = nodes[k].shape[-1]
        if _unpadded(shapes.get(other, reader.shape)) != (row,) or \
                _unpadded(reader.shape) != _unpadded(nodes[k].shape):
            return None
        return found[0], other

    removed: set[int] = set()
    replaced: dict[int, _Node] = {}
    for k, node in enumerate(nodes):
        if node.opcode != _NORMALIZE:
            continue
        scaled = only_reader(k, Op.MUL)
        shifted = only_reader(scaled[0], Op.ADD) if scaled is not None else None
        if scaled is None or shifted is None:
            continue
        end = nodes[shifted[0]]
        replaced[shifted[0]] = _Node(end.kind, _NORMALIZE_AFFINE,
                                     (node.operands[0], scaled[1], shifted[1]), end.result,
                                     end.shape, constants=node.constants)
        removed |= {k, scaled[0]}
    return [replaced.get(k, node) for k, node in enumerate(nodes) if k not in removed]


def _unpadded(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape without its leading ones (shapes that broadcast alike compare equal)."""
    start = next((d for d, size in enumerate(shape) if size != 1), len(shape))
    return tuple(shape[start:])


def _plan(last: KernelContext, nodes: list[_Node],
          where: dict[int, tuple[KernelContext, str]]) -> GroupPlan | None:
    """The plan of the group's ``nodes`` (``last``: its last operation's context), None
    when they do not fit one iteration space."""
    produced = {n.result for n in nodes}
    shape_of: dict[int, tuple[int, ...]] = {n.result: n.shape for n in nodes}
    source: dict[int, tuple[KernelContext, str]] = {}  # external operand -> where it is read
    for operand in dict.fromkeys(o for node in nodes for o in node.operands):
        if operand not in produced:
            ctx, name = where[operand]
            shape_of[operand] = tuple(ctx.input_shape(name))
            source[operand] = (ctx, name)
    space = _space(nodes, shape_of)
    if space is None or any(n.opcode in (_NORMALIZE, _NORMALIZE_AFFINE) and
                            not all(space.is_vector(o) for o in n.operands) for n in nodes):
        return None
    # The inputs in slot order: the variable ones (the runner's arguments), then the
    # constants, which the plan keeps.
    variable = [o for o in source if source[o][1] in source[o][0].variable_inputs]
    external = variable + [o for o in source if o not in variable]
    layout = _layout(space, external)
    if layout is None:
        return None
    outer, row, outer_strides = layout
    described = tuple((math.prod(shape_of[o]), space.is_vector(o), tuple(strides))
                      for o, strides in zip(external, outer_strides, strict=True))
    code, kinds = _code(nodes, space, external)
    chunk = row if space.reduces else min(row, CHUNK)
    kernels = module()
    plan = kernels.fused_plan(tuple(outer), row, chunk, described, bytes(kinds),
                              space.is_vector(nodes[-1].result), code)
    constants = tuple(np.ascontiguousarray(source[o][0].input(source[o][1]), np.float32)
                      for o in external[len(variable):])
    result_shape = _result_shape(last, nodes[-1])
    run_fused = kernels.fused_run

    def run(*values: np.ndarray) -> np.ndarray:
        out = np.empty(result_shape, np.float32)
        run_fused(plan, out, *values, *constants)
        return out

    return GroupPlan(run, tuple(variable))


def _result_shape(ctx: KernelContext, node: _Node) -> tuple[int, ...]:
    """The last operation's output shape (a reduction's, as its reference gives it)."""
    if node.opcode in _REDUCTIONS.values():
        return tuple(reduce_plan(ctx)[2])
    return node.shape


_OUTPUT = -1  # the output slot, numbered once the registers are counted
Instruction = tuple[int, int, int, int, float, float, tuple[float, ...], int]


def _code(nodes: list[_Node], space: _Space,
          external: list[int]) -> tuple[tuple[Instruction, ...], list[int]]:
    """The instructions (slots: the ``external`` inputs, then the registers, then the
    output) and each register's kind (1: vector, 0: scalar per row).
    A register is reused once its value has been read for the last time, never as the
    destination of the instruction reading it."""
    last_read = {o: k for k, node in enumerate(nodes) for o in node.operands}
    kinds: list[int] = []
    free: dict[int, list[int]] = {0: [], 1: []}
    inputs = len(external)
    slot_of = {o: k for k, o in enumerate(external)}
    code: list[list[float]] = []
    constants: list[tuple[float, ...]] = []

    def register(vector: int) -> int:
        if free[vector]:
            return free[vector].pop()
        kinds.append(vector)
        return inputs + len(kinds) - 1

    for k, node in enumerate(nodes):
        vector = int(space.is_vector(node.result))
        a, b = slot_of[node.operands[0]], slot_of[node.operands[min(1, len(node.operands) - 1)]]
        c = slot_of[node.operands[2]] if len(node.operands) > 2 else 0
        last = k == len(nodes) - 1
        clipped = node.clamp is not None and node.opcode not in (_CLIP, _RELU)
        destination = _OUTPUT if last and not clipped else register(vector)
        lo, hi = node.clamp if node.clamp is not None else (0.0, 0.0)
        if clipped:
            code.append([node.opcode, destination, a, b, 0.0, 0.0, 0])
            code.append([_CLIP, _OUTPUT if last else destination, destination, destination,
                         lo, hi, 0])
            constants += [(), ()]
        else:
            code.append([node.opcode, destination, a, b, lo, hi, c])
            constants.append(node.constants)
        slot_of[node.result] = destination
        for o in set(node.operands):
            slot = slot_of[o]
            if last_read[o] == k and slot >= inputs:
                free[kinds[slot - inputs]].append(slot)
    output = inputs + len(kinds)
    program = tuple((int(c[0]), output if c[1] == _OUTPUT else int(c[1]), int(c[2]),
                     int(c[3]), float(c[4]), float(c[5]), k, int(c[6]))
                    for c, k in zip(code, constants, strict=True))
    return program, kinds
