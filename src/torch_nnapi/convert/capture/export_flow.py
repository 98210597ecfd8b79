"""An exported program's ``torch.cond``, ``torch.while_loop`` and ``scan`` as TorchScript
control flow, for the CPU fallback.

The fallback runs a model as TorchScript (``frontend.script_capture`` traces the exported
graph), and tracing alone would keep only the branch, and the trip count, of the example.
So before tracing, each higher-order node becomes a call of a small scripted module whose
``forward`` holds the control flow as TorchScript statements (``if``, ``while``, ``for``
over the leading dimension) around calls of its bodies, each body being the node's
subgraph, prepared the same way (nested control flow) and traced on what it receives on
the example inputs. Tracing the whole then records those scripted calls as they are;
freezing inlines them, and the captured graph holds ``prim::If`` and ``prim::Loop`` nodes
whose blocks are the bodies' ATen ops: the fallback's loops and branches
(``fallback/bodies.py``), whose NNAPI-convertible parts become regions compiled once and
called at each iteration.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from ..errors import CaptureError, first_line
from .export import source_location

COND = "cond"
WHILE_LOOP = "while_loop"
SCAN = "scan"
CONTROL_FLOW = (COND, WHILE_LOOP, SCAN)

# TorchScript's annotation for a body operand of this Python type.
_ANNOTATIONS = {torch.Tensor: "Tensor", int: "int", float: "float", bool: "bool"}


def control_flow_nodes(module: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The higher-order nodes of ``module``'s graph (not of its subgraphs)."""
    return [n for n in module.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.HigherOrderOperator)]


def scriptable(module: torch.fx.GraphModule, examples: Sequence[Any]) -> torch.fx.GraphModule:
    """A copy of ``module`` whose cond, while_loop and scan nodes call scripted modules
    (``control_0``, ``control_1``...) holding the control flow; ``module`` itself when it
    has none. ``examples``: its inputs (the operands its nodes see are recorded on them).
    Raises CaptureError naming a higher-order op it cannot express, or a body that fails
    to trace."""
    nodes = control_flow_nodes(module)
    if not nodes:
        return module
    for n in nodes:
        name = _op_name(n)
        if name not in CONTROL_FLOW:
            raise CaptureError(f"the CPU fallback runs the model as TorchScript, which cannot"
                               f" hold the exported {name} ({n.name})")
    seen = _operands_seen(module, examples, set(nodes))
    result = copy.deepcopy(module)
    graph = result.graph
    by_name = {n.name: n for n in graph.nodes}
    for i, n in enumerate(nodes):
        if n not in seen:
            raise CaptureError(f"the exported {_op_name(n)} ({n.name}) does not run on the"
                               " example inputs: no operands to trace its bodies with")
        target = f"control_{i}"
        result.add_module(target, _control_module(module, n, seen[n]))
        copied = by_name[n.name]
        operands = _flat_operands(_op_name(copied), copied.args)
        with graph.inserting_before(copied):
            call = graph.call_module(target, tuple(operands))
        call.meta = dict(copied.meta)
        copied.replace_all_uses_with(call)
        graph.erase_node(copied)
    graph.eliminate_dead_code()
    result.recompile()
    return result


# ------------------------------------------------------------------------------ operands


def _op_name(n: torch.fx.Node) -> str:
    return str(n.target.name())  # type: ignore[union-attr]  # a HigherOrderOperator


def _flat_operands(kind: str, args: Sequence[Any]) -> list[Any]:
    """What the scripted module takes, in order, from the node's arguments (fx nodes, or
    what they are when it runs): cond's predicate and operands, while_loop's carried and
    additional values, scan's initial carry, scanned tensors and additional values (the
    subgraphs left out)."""
    if kind == COND:
        return [args[0], *args[3]]
    if kind == WHILE_LOOP:
        return [*args[2], *args[3]]
    return [*args[1], *args[2], *args[3]]


def _operands_seen(module: torch.fx.GraphModule, examples: Sequence[Any],
                   nodes: set[torch.fx.Node]) -> dict[torch.fx.Node, list[Any]]:
    """The flat operands each of ``nodes`` receives the first time ``module`` runs on
    ``examples``."""
    seen: dict[torch.fx.Node, list[Any]] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:  # whatever the node computes
            if n in nodes and n not in seen:
                args, _ = self.fetch_args_kwargs_from_env(n)
                seen[n] = [x.detach().clone() if isinstance(x, torch.Tensor) else x
                           for x in _flat_operands(_op_name(n), args)]
            return super().run_node(n)

    try:
        with torch.no_grad():
            Recorder(module).run(*examples, enable_io_processing=False)
    except Exception as e:  # noqa: BLE001 - the model's own failure, in one line
        raise CaptureError(f"the exported program fails on its example inputs:"
                           f" {type(e).__name__}: {first_line(e)}") from None
    return seen


# ------------------------------------------------------------------------------ bodies


def _traced_body(body: torch.fx.GraphModule, examples: Sequence[Any], single: bool,
                 where: str) -> torch.jit.ScriptModule:
    """``body`` (a subgraph) with its own control flow scripted, traced on ``examples``;
    returning one value (``single``: a while_loop's condition) or a tuple."""
    body = copy.deepcopy(body)
    output = next(n for n in reversed(body.graph.nodes) if n.op == "output")
    returned = output.args[0]
    items = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if single and len(items) != 1:
        raise CaptureError(f"{where} returns {len(items)} values where one bool is expected")
    output.args = (items[0] if single else tuple(items),)
    body.recompile()
    prepared = scriptable(body, examples)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            traced: torch.jit.ScriptModule = torch.jit.trace(  # type: ignore[no-untyped-call]
                prepared, tuple(examples), check_trace=False, strict=False)
    except Exception as e:  # noqa: BLE001 - tracing fails in many ways; say which
        raise CaptureError(f"{where} could not be traced for the CPU fallback:"
                           f" {type(e).__name__}: {first_line(e)}") from None
    return traced


def _control_module(module: torch.fx.GraphModule, n: torch.fx.Node, operands: list[Any]
                    ) -> torch.jit.ScriptModule:
    """The scripted module standing for higher-order node ``n`` (see the module
    docstring), its bodies traced on ``operands`` (what ``n`` receives on the examples)."""
    kind = _op_name(n)
    where = f"the exported {kind} ({n.name})"
    for i, x in enumerate(operands):
        if not isinstance(x, torch.Tensor):
            raise CaptureError(f"{where}: operand {i} is a {type(x).__name__}; the CPU"
                               " fallback passes only tensors to its bodies")
    val = n.meta.get("val")
    outputs = len(val) if isinstance(val, (tuple, list)) else 1
    params = [f"a{i}" for i in range(len(operands))]
    signature = ", ".join(f"{p}: Tensor" for p in params)
    returns = f"Tuple[{', '.join(['Tensor'] * outputs)}]"
    # the statement's comment names the user's call: the fallback's report shows it
    origin = f"  # exported {kind} {n.name} at {source_location(n)}"
    graphs = [_subgraph(module, a) for a in n.args if isinstance(a, torch.fx.Node)
              and a.op == "get_attr"]
    bodies: dict[str, torch.jit.ScriptModule]
    if kind == COND:
        pred, *rest = params
        passed = ", ".join(rest)
        bodies = {"then_branch": _traced_body(graphs[0], operands[1:], False,
                                              f"{where}'s true branch"),
                  "else_branch": _traced_body(graphs[1], operands[1:], False,
                                              f"{where}'s false branch")}
        source = (f"    if bool({pred}):{origin}\n        return self.then_branch({passed})\n"
                  f"    else:\n        return self.else_branch({passed})\n")
    elif kind == WHILE_LOOP:
        carried = params[:outputs]
        passed = ", ".join(params)
        bodies = {"cond_fn": _traced_body(graphs[0], operands, True, f"{where}'s cond_fn"),
                  "body_fn": _traced_body(graphs[1], operands, False, f"{where}'s body_fn")}
        source = (f"    while bool(self.cond_fn({passed})):{origin}\n"
                  f"        r = self.body_fn({passed})\n"
                  + "".join(f"        {c} = r[{i}]\n" for i, c in enumerate(carried))
                  + f"    return ({', '.join(carried)},)\n")
    else:
        source, bodies = _scan_source(n, graphs[0], params, operands, outputs,
                                      (where, origin))
    return _scripted(bodies, f"def forward(self, {signature}) -> {returns}:\n{source}")


def _scan_source(n: torch.fx.Node, combine: torch.fx.GraphModule, params: list[str],
                 operands: list[Any], outputs: int, names: tuple[str, str]
                 ) -> tuple[str, dict[str, torch.jit.ScriptModule]]:
    """A scan as a ``for`` loop over the scanned tensors' leading dimension: the carry
    passed on, each step's other results stacked. ``names``: the node as errors name it,
    and the loop statement's comment."""
    where, origin = names
    carries, scanned = len(n.args[1]), len(n.args[2])  # type: ignore[arg-type]  # lists
    if not operands[carries:carries + scanned] or \
            operands[carries].shape[0] == 0:
        raise CaptureError(f"{where} scans no steps on the example inputs")
    carry, xs, extra = (params[:carries], params[carries:carries + scanned],
                        params[carries + scanned:])
    step = [*operands[:carries], *(x[0] for x in operands[carries:carries + scanned]),
            *operands[carries + scanned:]]
    bodies = {"combine_fn": _traced_body(combine, step, False, f"{where}'s combine_fn")}
    stacked = [f"y{i}" for i in range(outputs - carries)]
    lines = [f"    c{i} = {c}\n" for i, c in enumerate(carry)]
    lines += [f"    {y}: List[Tensor] = []\n" for y in stacked]
    # the step's index as a tensor: the slices' sizes are then known to the fallback
    # (a slice at a run-time number may have any size, as far as it can tell)
    lines.append("    k = torch.zeros([1], dtype=torch.long)\n")
    lines.append(f"    for _ in range({xs[0]}.size(0)):{origin}\n")
    call = ", ".join([*(f"c{i}" for i in range(carries)),
                      *(f"torch.index_select({x}, 0, k).squeeze(0)" for x in xs), *extra])
    lines.append(f"        r = self.combine_fn({call})\n")
    lines.append("        k = k + 1\n")
    lines += [f"        c{i} = r[{i}]\n" for i in range(carries)]
    lines += [f"        {y}.append(r[{carries + i}])\n" for i, y in enumerate(stacked)]
    results = [*(f"c{i}" for i in range(carries)), *(f"torch.stack({y})" for y in stacked)]
    lines.append(f"    return ({', '.join(results)},)\n")
    return "".join(lines), bodies


def _subgraph(module: torch.fx.GraphModule, node: torch.fx.Node) -> torch.fx.GraphModule:
    found = module
    for part in str(node.target).split("."):
        found = getattr(found, part)
    assert isinstance(found, torch.fx.GraphModule), "a higher-order op's body is a subgraph"
    return found


def _scripted(bodies: dict[str, torch.jit.ScriptModule], forward: str
              ) -> torch.jit.ScriptModule:
    """A scripted module holding ``bodies`` as submodules, with ``forward`` (source)."""

    # A new class per module: ``define`` adds the method to the class.
    class ControlFlow(torch.nn.Module):
        """An exported cond, while_loop or scan as TorchScript control flow."""

        def __init__(self) -> None:
            super().__init__()
            for name, body in bodies.items():
                self.add_module(name, body)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted: torch.jit.ScriptModule = torch.jit.script(ControlFlow())
    scripted.define(forward)
    return scripted
