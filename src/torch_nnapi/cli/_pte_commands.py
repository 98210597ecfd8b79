"""The commands' .pte paths (``_pte.py`` reads and loads the file): ``convert --format
pte``, ``run``, ``inspect``, ``check`` and ``bench`` of an ExecuTorch program.

A .pte holds the NNAPI regions as delegates and the rest as ExecuTorch's operators; it runs
through ``executorch.runtime`` with NnapiBackend (on Linux over torch-nnapi's
libneuralnetworks.so), its outputs nested as the model returned them.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..nnapi.errors import counted
from ._errors import CliError, ExitCode, usage
from ._inputs import InputSpec, conform, example_inputs, parse_input, read_input_files
from ._loading import load_model, writing
from ._outputs import save_outputs, summary
from ._pte import (
    check_pte_inputs,
    input_specs,
    load_pte,
    no_torchscript_options,
    output_leaves,
    pte_info,
)

# convert's options that make TorchScript modules only
TORCHSCRIPT_ONLY = ("--lite", "--bundle", "--compare", "--capture")


def pte_policy(args: argparse.Namespace) -> dict[str, Any]:
    """The regions' knobs (``--fallback-op``...), checked as for ``--fallback``: a .pte
    always leaves what NNAPI does not run to ExecuTorch's kernels."""
    from ._fallback import fallback_options

    chosen = fallback_options(argparse.Namespace(**{**vars(args), "fallback": True}))
    chosen.pop("fallback")
    return chosen


def pte_layout(specs: Sequence[InputSpec]) -> bool | None:
    """NnapiPartitioner's ``nhwc`` from the ``--input`` specs (one choice for the
    program); flexible dimensions are not taken yet (a usage error naming the input)."""
    for i, spec in enumerate(specs):
        if spec.flexible:
            raise usage(f"input {i}: flexible dimensions are not supported for a .pte yet",
                        "give fixed shapes with --input")
    chosen = {spec.nhwc for spec in specs} - {None}
    if len(chosen) > 1:
        raise usage("a .pte takes one layout choice for all its inputs (nhwc or nchw)")
    return chosen.pop() if chosen else None


def convert_pte(args: argparse.Namespace, model: Any, examples: tuple, nhwc: bool | None,
                policy: dict[str, Any]) -> int:
    """``convert --format pte``: lowers ``model`` with NnapiPartitioner and saves the .pte."""
    from ..convert.errors import CaptureError, ConversionError

    no_torchscript_options(args, *TORCHSCRIPT_ONLY)
    try:
        from ..convert.executorch.pte import to_pte_with_details
    except ImportError as e:
        raise CliError(f"--format pte needs ExecuTorch, which is not installed ({e})",
                       ExitCode.CANNOT_CONVERT) from None
    options = dict(nhwc=nhwc, compilation_preference=args.preference,
                   relax_fp32_to_fp16=args.fp16, **policy)
    if args.target_level is not None:
        options["target_level"] = args.target_level
    try:
        made = to_pte_with_details(model, examples, **options)
    except (ConversionError, CaptureError, ValueError) as e:
        raise CliError(str(e).splitlines()[0], ExitCode.CANNOT_CONVERT) from None
    with writing(args.output), open(args.output, "wb") as f:
        f.write(made.pte)
    regions, kept = made.partition.regions, made.partition.kept
    operations = sum(sum(r.operations.values()) for r in regions)
    print(f"converted in {made.seconds:.2f} s: {len(regions)} NNAPI region(s) with"
          f" {operations} NNAPI operations, {len(kept)} node(s) on ExecuTorch's kernels")
    for node in kept:
        print(f"  on ExecuTorch: {node.kind} at {node.location}: {node.reason}")
    print(f"saved {args.output}")
    if not args.check:
        return int(ExitCode.OK)
    return _verdicts(load_pte(args.output), examples, model, args)


def pte_inputs(info: Any, args: argparse.Namespace) -> tuple[tuple, str]:
    """(inputs, where they come from): files, ``--input`` shapes, else random tensors of
    the shapes the program takes (seeded)."""
    taken = input_specs(info)
    specs = [parse_input(t) for t in args.input]
    if getattr(args, "input_file", None):
        tensors = read_input_files(args.input_file, specs or taken, args.mean, args.std)
        return tuple(conform(tensors, [*specs, *taken[len(specs):]])), "from files"
    if getattr(args, "mean", None) or getattr(args, "std", None):
        raise usage("--mean and --std apply to image input files only")
    if specs:
        return example_inputs(specs), "random"
    return example_inputs(taken), "random"


def run_pte(args: argparse.Namespace) -> int:
    """``run`` of a .pte: its outputs by their place in what the model returns."""
    no_torchscript_options(args, "--host", "--profile")
    module = load_pte(args.module)
    inputs, source = pte_inputs(module.info, args)
    check_pte_inputs(module, inputs)
    print(f"inputs ({source}): " + ", ".join(f"{list(x.shape)} {str(x.dtype)[6:]}"
                                            for x in inputs))
    from ..convert.tools.bench import time_calls

    out = module(*inputs)  # the first run: not timed with the others
    latency = time_calls(lambda: module(*inputs), args.repeat, warmup=0)
    leaves = output_leaves(module, out)
    for name, tensor in leaves:
        print(f"{name}: {summary(tensor)}")
    print(f"latency (ExecuTorch with NnapiBackend, {args.repeat} runs): median"
          f" {latency.median * 1e3:.2f} ms, min {latency.minimum * 1e3:.2f} ms")
    if args.save_outputs:
        save_outputs(args.save_outputs, [t for _, t in leaves], [n for n, _ in leaves])
        print(f"saved outputs to {args.save_outputs}")
    return int(ExitCode.OK)


def describe_pte(path: str) -> dict[str, Any]:
    """What ``inspect`` shows of a .pte, as plain data."""
    info = pte_info(path)
    steps: list[dict[str, Any]] = []
    for step in info.steps:
        if isinstance(step, str):
            steps.append({"kernel": step})
            continue
        delegate = info.delegates[step]
        entry: dict[str, Any] = {"delegate": step, "backend": delegate.backend,
                                 "bytes": delegate.size}
        if delegate.model is not None:
            counts = Counter(op.type.name for op in delegate.model.operations)
            entry.update(operations=dict(counts.most_common()),
                         feature_level=int(delegate.model.feature_level))
            called = delegate.model.referenced_models()  # IF's branches, WHILE's bodies
            if called:
                entry["called_models"] = [
                    dict(Counter(op.type.name for op in m.operations).most_common())
                    for m in called]
        steps.append(entry)
    return {"program": path, "bytes": info.size,
            "inputs": [f"{t.dtype} {list(t.shape)}" for t in info.inputs],
            "outputs": [f"{t.dtype} {list(t.shape)}" for t in info.outputs],
            "structured_outputs": info.structure is not None, "steps": steps}


def _counted(operations: dict[str, int]) -> str:
    return ", ".join(f"{n} x{c}" if c > 1 else n for n, c in operations.items())


def inspect_pte(args: argparse.Namespace) -> int:
    """``inspect`` of a .pte: the steps in running order, NNAPI's with their operations."""
    found = describe_pte(args.module)
    if args.json:
        print(json.dumps(found, indent=1))
        return int(ExitCode.OK)
    print(f"ExecuTorch program {args.module} ({found['bytes']} bytes)")
    print(f"inputs: {', '.join(found['inputs'])}; outputs: {', '.join(found['outputs'])}")
    kernels = Counter(s["kernel"] for s in found["steps"] if "kernel" in s)
    for step in found["steps"]:
        if "kernel" in step:
            if not args.summary:
                print(f"  ExecuTorch kernel {step['kernel']}")
            continue
        if "operations" not in step:
            print(f"  delegate {step['delegate']}: {step['backend']} ({step['bytes']} bytes)")
            continue
        print(f"  delegate {step['delegate']}: NnapiBackend, feature level"
              f" {step['feature_level']}: {_counted(step['operations'])}")
        for k, called in enumerate(step.get("called_models", [])):
            print(f"    called model {k} (of IF or WHILE): {_counted(called)}")
    regions = sum(1 for s in found["steps"] if "operations" in s)
    print(f"{regions} NNAPI region(s); on ExecuTorch's kernels: "
          + (", ".join(f"{n} x{c}" if c > 1 else n for n, c in kernels.most_common())
             or "nothing"))
    return int(ExitCode.OK)


def check_pte(args: argparse.Namespace) -> int:
    """``check`` of a .pte: its outputs against ``--original``'s (without it, that it
    loads and runs)."""
    module = load_pte(args.model)
    inputs, _ = pte_inputs(module.info, args)
    check_pte_inputs(module, inputs)
    if not args.original:
        leaves = output_leaves(module, module(*inputs))
        print(f"{args.model}: loads and runs ({counted(len(leaves), 'output')}); give"
              " --original MODEL to compare them with the model's")
        return int(ExitCode.OK)
    return _verdicts(module, inputs, load_model(args.original, "original"), args)


def _verdicts(module: Any, inputs: tuple, original: Any, args: argparse.Namespace) -> int:
    from ..convert.tools.check import FLOAT_TOLERANCE, QUANTA_TOLERANCE
    from ..convert.tools.pte import check_pte as compare

    report = compare(module, inputs, original,
                     float_tolerance=args.rtol if args.rtol is not None else FLOAT_TOLERANCE,
                     quanta_tolerance=args.quanta if args.quanta is not None
                     else QUANTA_TOLERANCE)
    if getattr(args, "json", False):
        print(json.dumps({"ok": report.ok, "errors": report.errors, "outputs": [
            {"output": c.name, "error": c.error, "unit": c.unit, "tolerance": c.tolerance,
             "ok": c.ok} for c in report.checks]}, indent=1))
    else:
        for error in report.errors:
            print(f"mismatch: {error}")
        for c in report.checks:
            print(f"{c.name}: {'ok' if c.ok else 'MISMATCH'}: error {c.error:.3g} {c.unit}"
                  f" (tolerance {c.tolerance:g})")
    return int(ExitCode.OK if report.ok else ExitCode.MISMATCH)


def bench_pte(args: argparse.Namespace) -> int:
    """``bench`` of a .pte: loading, the first run, the runs after, and eager PyTorch."""
    from ..convert.tools.pte import bench_pte as measure
    from ._pte import read_program

    no_torchscript_options(args, "--report")
    module = load_pte(args.module)  # checks the program loads, with one-line errors
    inputs, source = pte_inputs(module.info, args)
    check_pte_inputs(module, inputs)
    original = load_model(args.original, "original") if args.original else None
    if original is not None and hasattr(original, "eval"):
        original.eval()
    report = measure(read_program(args.module), inputs, args.runs, original)
    if args.json:
        print(json.dumps(dict(report.to_json(), input_source=source), indent=1))
        return int(ExitCode.OK)
    print(f"inputs ({source}); ExecuTorch with NnapiBackend, {args.runs} runs")
    print(f"load {report.load_seconds * 1e3:.1f} ms (builds and compiles the NNAPI models),"
          f" first run {report.first_run_seconds * 1e3:.2f} ms")
    print(f"median {report.latency.median * 1e3:.3f} ms, p90 {report.latency.p90 * 1e3:.3f}"
          f" ms, min {report.latency.minimum * 1e3:.3f} ms")
    if report.eager is not None:
        print(f"eager PyTorch median {report.eager.median * 1e3:.3f} ms; .pte / eager "
              + (f"{report.ratio:.2f}x (both on {report.eager.threads} threads)"
                 if report.ratio is not None else f"no ratio: {report.refusal}"))
    return int(ExitCode.OK)
