"""Control flow of an exported program: ``torch.cond`` and ``torch.while_loop`` (and
``scan``) as NNAPI IF and WHILE (feature level 4), their graph modules lowered into models
the operation refers to (``builder/called.py``; the pipeline lowers them with the same
lowerings as the caller).

IF takes a TENSOR_BOOL8 condition of shape [1], its two branch models and the tensors it
passes to both; the branches return the same number of tensors of the same types and shapes.
WHILE runs its condition model (one TENSOR_BOOL8 [1] output) and body model on the carried
tensors, then the read-only ones; the body returns the carried tensors' next values, which
keep their types and shapes. Constant arguments are folded into the called models; a carried
constant becomes a constant operand. A ``scan`` is a WHILE whose condition and body graphs are
built here around its combine_fn (:func:`scan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...nnapi.codes import OperationType as Op
from ..builder.called import (
    CalledModel,
    disagreement,
    lower_called,
    model_operand,
    one_element,
    passed_operand,
    results_of,
)
from ..builder.context import Arg, Converter
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering

_LEVEL = 4  # IF and WHILE: Android 11


@lowering("higher_order::cond", nnapi=("IF",),
          notes="torch.cond in an exported program (the ExecuTorch path); both branches"
          " convert, feature level 4")
def cond(cx: Converter, pred: Arg, true_branch: Arg, false_branch: Arg,
         operands: Arg) -> Arg:
    _check_level(cx, "torch.cond", "IF")
    if not isinstance(pred, TensorValue):
        raise Unsupported("its condition is known at conversion time (a constant)")
    if not _one_bool(pred):
        raise Unsupported(f"its condition is a {pred.dtype} tensor of shape"
                          f" {list(pred.shape)}; IF takes one bool")
    args = _arguments(operands, "operands")
    then_model = lower_called(cx, true_branch, args, "the true branch")
    else_model = lower_called(cx, false_branch, args, "the false branch")
    problem = disagreement(then_model, else_model, ("the true branch", "the false branch"))
    if problem:
        raise Unsupported(f"IF's branches must agree: {problem}")
    written, returned = results_of(cx, then_model)
    cx.operation(Op.IF, dict(condition=one_element(cx, pred),
                             then_model=model_operand(cx, then_model),
                             else_model=model_operand(cx, else_model),
                             inputs=_passed(cx, args)), dict(outputs=written))
    return _node_result(returned)


_WHILE_NOTES = ("torch.while_loop in an exported program (the ExecuTorch path); carried"
                " tensors keep their shapes, feature level 4")


@lowering("higher_order::while_loop", nnapi=("WHILE",), notes=_WHILE_NOTES)
def while_loop(cx: Converter, condition: Arg, body: Arg, carried: Arg, additional: Arg) -> Arg:
    _check_level(cx, "torch.while_loop", "WHILE")
    state: list[TensorValue] = []
    for a in _arguments(carried, "carried_inputs"):
        if isinstance(a, torch.Tensor):
            a = cx.torch_constant(a)
        if not isinstance(a, TensorValue):
            raise Unsupported("it carries a number, not a tensor; WHILE carries tensors")
        state.append(a)
    args = [*state, *_arguments(additional, "additional_inputs")]
    condition_model = lower_called(cx, condition, args, "the condition")
    if len(condition_model.results) != 1 or not _one_bool(condition_model.results[0]):
        raise Unsupported("its condition must return one bool")
    body_model = lower_called(cx, body, args, "the body")
    _check_carried(state, body_model)
    written, returned = results_of(cx, body_model)
    cx.operation(Op.WHILE, dict(condition_model=model_operand(cx, condition_model),
                                body_model=model_operand(cx, body_model),
                                inputs=_passed(cx, args)), dict(outputs=written))
    return _node_result(returned)


_SCAN_NOTES = ("torch.ops.higher_order.scan in an exported program (the ExecuTorch path): a"
               " WHILE over the leading dimension (a counter, the carry, the stacked"
               " outputs), feature level 4")
_ATEN = torch.ops.aten


@lowering("higher_order::scan", nnapi=("WHILE",), notes=_SCAN_NOTES)
def scan(cx: Converter, combine: Arg, init: Arg, xs: Arg, additional: Arg) -> Arg:
    """A WHILE carrying a step counter, the carry and each stacked output (zeros at first):
    the body slices the scanned tensors at the counter (GATHER), runs ``combine`` and writes
    its other results at the counter's row (SELECT on a one-row mask)."""
    _check_level(cx, "torch.ops.higher_order.scan", "WHILE")
    if not isinstance(combine, torch.fx.GraphModule):
        raise Unsupported(f"its combine_fn is a {type(combine).__name__}, not a graph module")
    carry = _arguments(init, "init")
    scanned = [cx.torch_constant(x) if isinstance(x, torch.Tensor) else x
               for x in _arguments(xs, "xs")]
    extra = _arguments(additional, "additional_inputs")
    if not scanned or not all(isinstance(x, TensorValue) and x.rank >= 1 for x in scanned):
        raise Unsupported("it scans no tensors; WHILE slices tensors")
    steps = {x.shape[0] for x in scanned}
    if len(steps) != 1 or not isinstance(next(iter(steps)), int) or next(iter(steps)) < 1:
        raise Unsupported(f"its scanned tensors' leading sizes are {sorted(map(str, steps))};"
                          " WHILE needs one fixed number of steps")
    condition, body, stacked = _scan_graphs(combine, len(carry), len(scanned), int(*steps))
    returned = while_loop(cx, condition, body, [torch.zeros(1, dtype=torch.int64), *carry,
                                                *stacked], [*scanned, *extra])
    return _node_result(list(returned)[1:])


def _scan_graphs(combine: torch.fx.GraphModule, carries: int, scanned: int, steps: int
                 ) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule, list[torch.Tensor]]:
    """The condition and body graphs of a scan's WHILE, taking (counter, carry..., stacked
    outputs..., scanned..., additional...), and the stacked outputs' first values."""
    inputs = [n for n in combine.graph.nodes if n.op == "placeholder"]
    output = next(n for n in combine.graph.nodes if n.op == "output")
    results = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) \
        else [output.args[0]]
    vals = [_recorded(n) for n in inputs]
    ys = [_recorded(n) for n in results[carries:]]
    stacked = [torch.zeros((steps, *y.shape), dtype=y.dtype) for y in ys]
    examples = [torch.zeros(1, dtype=torch.int64), *vals[:carries], *stacked,
                *(torch.zeros((steps, *v.shape), dtype=v.dtype)
                  for v in vals[carries:carries + scanned]), *vals[carries + scanned:]]
    root = torch.nn.Module()
    for n in combine.graph.nodes:
        if n.op == "get_attr":
            setattr(root, str(n.target), _attribute(combine, str(n.target)))
    graphs = []
    for is_body in (False, True):
        graph = torch.fx.Graph()
        held = [graph.placeholder(f"arg{i}") for i in range(len(examples))]
        counter = held[0]
        if not is_body:
            graph.output(graph.call_function(_ATEN.lt.Scalar, (counter, steps)))
            graphs.append(_probed(root, graph, examples))
            continue
        sliced = [graph.call_function(_ATEN.squeeze.dim, (graph.call_function(
            _ATEN.index_select.default, (x, 0, counter)), 0))
            for x in held[1 + carries + len(ys):1 + carries + len(ys) + scanned]]
        passed = [*held[1:1 + carries], *sliced, *held[1 + carries + len(ys) + scanned:]]
        copied = graph.graph_copy(combine.graph, dict(zip(inputs, passed, strict=True)))
        new = list(copied) if isinstance(copied, (tuple, list)) else [copied]
        written = []
        for i, (y, acc) in enumerate(zip(new[carries:], held[1 + carries:], strict=False)):
            name = f"scan_rows_{i}"
            setattr(root, name, torch.arange(steps).reshape((steps,) + (1,) * ys[i].dim()))
            rows = graph.get_attr(name)
            hit = graph.call_function(_ATEN.eq.Tensor, (rows, counter))
            row = graph.call_function(_ATEN.unsqueeze.default, (y, 0))
            written.append(graph.call_function(_ATEN.where.self, (hit, row, acc)))
        step = graph.call_function(_ATEN.add.Tensor, (counter, 1))
        graph.output((step, *new[:carries], *written))
        graphs.append(_probed(root, graph, examples))
    return graphs[0], graphs[1], stacked


def _recorded(n: Any) -> torch.Tensor:
    """Zeros of the shape and dtype a combine_fn value records."""
    val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"its combine_fn's {getattr(n, 'name', n)} records no tensor")
    return torch.zeros(tuple(int(d) for d in val.shape), dtype=val.dtype)


def _attribute(module: torch.nn.Module, target: str) -> Any:
    found: Any = module
    for part in target.split("."):
        found = getattr(found, part)
    return found


def _probed(root: torch.nn.Module, graph: torch.fx.Graph, examples: Sequence[torch.Tensor]
            ) -> torch.fx.GraphModule:
    """``graph`` as a module whose nodes record what they compute on ``examples`` (as an
    exported graph's do: the called lowering reads them)."""
    module = torch.fx.GraphModule(root, graph)

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:  # whatever the node computes
            result = super().run_node(n)
            n.meta["val"] = result
            return result

    with torch.no_grad():
        Recorder(module).run(*examples)
    return module


def _one_bool(t: TensorValue) -> bool:
    """Whether ``t`` is one bool (0-D, or of one element), as IF and WHILE decide on."""
    return t.dtype == "bool" and all(d == 1 for d in t.shape)


def _node_result(returned: list[Arg]) -> Arg:
    """What the node returns: its one result, or a tuple of them (the driver's convention)."""
    return returned[0] if len(returned) == 1 else tuple(returned)


def _check_level(cx: Converter, what: str, operation: str) -> None:
    if cx.target_level is not None and cx.target_level < _LEVEL:
        raise Unsupported(f"{what} becomes NNAPI {operation}, feature level {_LEVEL}, above"
                          f" the target level {cx.target_level}")


def _arguments(values: Arg, name: str) -> list[Arg]:
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        raise Unsupported(f"its {name} are a {type(values).__name__}, not a list")
    return list(values)


def _passed(cx: Converter, args: Sequence[Arg]) -> list[TensorValue]:
    """The operands the operation passes: the tensors among ``args`` (constants and numbers
    are folded into the called models)."""
    return [passed_operand(cx, a) for a in args if isinstance(a, TensorValue)]


def _check_carried(state: Sequence[TensorValue], body: CalledModel) -> None:
    if len(body.results) != len(state):
        raise Unsupported(f"its body returns {len(body.results)} tensors for"
                          f" {len(state)} carried ones")
    for i, (before, after, rank) in enumerate(zip(state, body.results, body.ranks,
                                                  strict=True)):
        shape = tuple(after.shape) if rank else ()
        if (before.nnapi_type, tuple(before.shape), before.scale, before.zero_point) != \
                (after.nnapi_type, shape, after.scale, after.zero_point):
            raise Unsupported(f"its body changes carried tensor {i} from a {before.dtype}"
                              f" of shape {list(before.shape)} to a {after.dtype} of shape"
                              f" {list(shape)}; WHILE keeps types and shapes")
