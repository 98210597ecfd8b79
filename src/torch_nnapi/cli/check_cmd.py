"""``torch-nnapi check``: will this PyTorch model run on NNAPI, and correctly?

Converts the original model for the given inputs (``--input`` as for ``convert``, or real
ones with ``--input-file``) and reports, without stopping at the first problem: unsupported
operations with their source locations; the feature level the result needs and which
operations force it; operation counts and inserted layout transposes; with
``--target-level``, what a device of that level would reject; the converted module run
through PyTorch's NNAPI runtime against eager PyTorch; and a layer-by-layer comparison
naming the first layer over tolerance (``--isolated``: each layer fed PyTorch's own input).
The outputs decide the verdict: in a quantized network whose outputs match, layers over the
tolerance of the accumulated comparison are drift (named, not a failure).
For quantized models the reference is checked against a second PyTorch engine: where the
two disagree and NNAPI agrees with one, the report says "reference disagrees".
``--report FILE.html`` also writes the report as one self-contained page.

With ``--fallback`` (and its knobs, as for ``convert``) a model that does not convert whole
is partitioned, and the report shows the regions, the tensors crossing each boundary with
their sizes, and every node left on the CPU with its source line and why; with
``--target-level``, what a device of that level would reject runs on the CPU.

Exit code (cli/_errors.py): 0 all good, 1 cannot convert, 2 converts but disagrees with
PyTorch (or fails to run), 3 a device of the target level would reject it, 4 the model does
not take the inputs.
"""

from __future__ import annotations

import argparse

from ..nnapi.errors import counted
from ._commands import command
from ._devices import add_device_option, device_profiles, plans_json, render_plans
from ._errors import CliError, ExitCode, usage
from ._fallback import add_fallback_options, fallback_options
from ._inputs import (
    add_input_options,
    conform,
    example_inputs,
    layout_options,
    parse_input,
    read_input_files,
    spec_of,
)
from ._loading import (
    check_input_count,
    load_model,
    output_path,
    print_report,
    stored_examples,
)
from ._progress import Progress
from ._pte import is_pte_path
from ._pte_commands import check_pte


def _configure(p: argparse.ArgumentParser) -> None:
    from ..nnapi.codes import FeatureLevel
    from .convert_cmd import add_capture_option

    p.add_argument("model", help="the original model: a TorchScript file, a pickled nn.Module"
                                 " or a .pt2 file (torch.export.save); or a .pte, compared"
                                 " with --original")
    p.add_argument("--original", metavar="MODEL",
                   help="with a .pte: the model it was made from, whose outputs it must match")
    add_capture_option(p)
    add_input_options(p)
    p.add_argument("--target-level", type=int, choices=[int(v) for v in FeatureLevel],
                   help="report what a device of this NNAPI feature level would reject")
    p.add_argument("--rtol", type=float, default=None, metavar="R",
                   help="float tolerance, relative to each tensor's magnitude (default 1e-4)")
    p.add_argument("--quanta", type=float, default=None, metavar="Q",
                   help="quantized tolerance in quanta (default 8)")
    p.add_argument("--host", action="store_true",
                   help="run the converted module on the host runtime instead of PyTorch's"
                        " NNAPI runtime")
    p.add_argument("--quantized-engine", default="qnnpack", metavar="ENGINE",
                   help="PyTorch's quantized kernels for the eager reference of quantized"
                        " models (default: %(default)s, as on mobile; 'default' keeps"
                        " PyTorch's); another engine checks the reference")
    p.add_argument("--no-layers", action="store_true",
                   help="skip the layer-by-layer comparison")
    p.add_argument("--isolated", action="store_true",
                   help="compare each layer computed from PyTorch's own input: what it adds"
                        " alone (default: from the converted layers before it, where a"
                        " quantized network's layers over tolerance under matching outputs"
                        " are drift, not a failure)")
    p.add_argument("--worst", type=int, default=5, metavar="N",
                   help="how many of the worst layers to list (default: %(default)s)")
    p.add_argument("--report", metavar="FILE.html",
                   help="also write the report as one self-contained HTML page")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_fallback_options(p)
    add_device_option(p)


def _examples(args: argparse.Namespace) -> tuple[list, tuple | None]:
    """The inputs the options give (None: none given, a .pt2's own are used)."""
    specs = [parse_input(text) for text in args.input]
    if args.input_file:
        tensors = conform(read_input_files(args.input_file, specs, args.mean, args.std), specs)
        if specs and len(specs) != len(tensors):
            raise usage(f"{len(specs)} --input for {counted(len(tensors), 'input')} read from"
                        " --input-file", "give one --input per file input, or none")
        return specs, tuple(tensors)
    if args.mean or args.std:
        raise usage("--mean and --std apply to image input files only")
    return specs, example_inputs(specs) if specs else None


def _stored_examples(model) -> tuple[list, tuple]:
    examples = stored_examples(model)
    if examples is None:
        raise usage("give the model's inputs with --input or --input-file (only a .pt2 file"
                    " carries example inputs)")
    return [spec_of(x) for x in examples], examples


@command("check", "check that a PyTorch model converts, which NNAPI feature level it needs,"
         " and that the result matches PyTorch layer by layer", _configure, torchscript=True,
         runs_models=True)
def run(args: argparse.Namespace) -> int:
    import torch

    from ..convert.tools.check import FLOAT_TOLERANCE, QUANTA_TOLERANCE, check_model

    if is_pte_path(args.model):
        return check_pte(args)
    if args.original:
        raise usage("--original goes with a .pte (the model it was made from)",
                    "check converts the model it is given and compares it itself")
    if args.worst < 0:
        raise usage("--worst must be 0 or more")
    engines = torch.backends.quantized.supported_engines
    if args.quantized_engine not in ("default", *engines):
        raise usage(f"quantized engine {args.quantized_engine!r} is not available in this"
                    f" PyTorch (it has {', '.join(engines)})")
    fallback = fallback_options(args)
    profiles = device_profiles(args)
    if args.report:
        output_path(args.report, args.model)
    specs, examples = _examples(args)
    with Progress("check") as progress:
        progress.step("loading the model")
        model = load_model(args.model)
        if examples is None:
            specs, examples = _stored_examples(model)
        check_input_count(model, len(examples), "inputs")
        report = check_model(
            model, examples, **(layout_options(specs) if specs else {}), capture=args.capture,
            float_tolerance=FLOAT_TOLERANCE if args.rtol is None else args.rtol,
            quanta_tolerance=QUANTA_TOLERANCE if args.quanta is None else args.quanta,
            target_level=args.target_level, host=args.host, layers=not args.no_layers,
            engine=None if args.quantized_engine == "default" else args.quantized_engine,
            isolated=args.isolated, progress=progress.step, **fallback)
        plans, for_device = _device_plans(model, examples, specs, args, profiles, fallback,
                                          report, progress.step)
    if report.input_error:
        raise usage(report.input_error, "check the --input shapes and dtypes")
    from ._html import check_page

    lines = [] if args.json else render(report, specs, args.worst) + render_plans(plans)
    if for_device and not args.json:
        lines += [f"converted for {profiles[0].name} (--fallback: what it cannot run stays on"
                  " PyTorch's CPU):", *render_plans(for_device)]
    data = dict(report.to_json(), device_plans=plans_json(plans),
                device_plans_converted_for_device=plans_json(for_device)) if args.json else None
    print_report(data, lines, args.json, args.report,
                 lambda: check_page(report, args.model, plans, for_device))
    return int(report.exit_code)  # the codes of ExitCode (cli/_errors.py)


def _device_plans(model, examples, specs, args, profiles, fallback, report, step
                  ) -> tuple[list, list]:
    """``--device``: Android's plan for the converted model (each region's) on the drivers;
    with ``--fallback``, also converted for the first driver (``convert(..., device=)``)."""
    if not profiles or not report.conversion.converted:
        return [], []
    from ..convert.tools.device_plan import plans_for_model
    from ..nnapi.errors import NnapiError

    step("planning for the devices")
    options = dict(capture=args.capture, **(layout_options(specs) if specs else {}), **fallback,
                   target_level=args.target_level if fallback["fallback"] else None)
    try:
        plans = plans_for_model(model, examples, profiles, args.preference, **options)
        if not fallback["fallback"]:
            return plans, []
        step(f"converting for {profiles[0].name}")
        return plans, plans_for_model(model, examples, profiles, args.preference,
                                      device=profiles[0], **options)
    except NnapiError as e:
        raise CliError(f"the devices cannot run the model: {e}", ExitCode.RUN_FAILED) from None


def render(report, specs=(), worst: int = 5) -> list[str]:
    """The report as text lines."""
    from ..convert.levels import render_operations
    from ..nnapi.codes import FeatureLevel

    lines = []
    described = []
    for i, entry in enumerate(report.inputs):
        spec = specs[i] if i < len(specs) else None
        extra = []
        if entry.get("nhwc") or (spec is not None and spec.nhwc):
            extra.append("NHWC")
        if spec is not None and spec.flexible:
            extra.append("flexible dims " + ",".join(map(str, spec.flexible)))
        described.append(f"{entry['shape']} {entry['dtype']}"
                         + (f" ({', '.join(extra)})" if extra else ""))
    lines.append("inputs: " + "; ".join(described))
    facts, levels = report.conversion, report.levels
    if facts.unsupported:
        lines.append(facts.unsupported_text)
    if facts.converted:
        level = FeatureLevel(levels.feature_level)
        ops = sum(facts.operation_counts.values())
        lines.append(f"converts: {ops} NNAPI operations in {facts.seconds:.2f} s")
        if facts.partition is not None:
            lines.extend(facts.partition.render())
        lines.append(f"feature level {int(level)} (Android {level.android}, API"
                     f" {level.api_level})" + (", forced by:" if levels.forced_by
                                               or _model_forces(levels) else ""))
        for requirement in levels.model_requirements:
            if requirement.level == levels.feature_level:
                lines.append(f"  {requirement.reason}")
        lines.extend(render_operations(levels.forced_by, levels.feature_level - 1))
        lines.append("operations: " + ", ".join(f"{n} {name}" for name, n in
                                                facts.operation_counts.items()))
        lines.extend(_islands(report.quantization))
        lines.append(f"layout transposes inserted: {len(facts.transposes)}")
        for t in facts.transposes:
            dims = "x".join(map(str, t.input_shape))
            lines.append(f"  operation {t.index}: TRANSPOSE [{dims}] by {t.permutation}, for"
                         f" {t.origin or 'an unknown node'}")
        if levels.target_level is not None:
            target = FeatureLevel(levels.target_level)
            rejected = levels.rejected
            if levels.fits_target:
                lines.append(f"target level {int(target)} (Android {target.android}): every"
                             " operation is supported")
            else:
                lines.append(f"target level {int(target)} (Android {target.android}): a device"
                             f" would reject {len(rejected)} operation"
                             f"{'s' if len(rejected) != 1 else ''}")
                for requirement in levels.rejected_by_model:
                    lines.append(f"  the model: {requirement.reason}")
                lines.extend(render_operations(rejected, levels.target_level))
        lines.extend(_numbers(report, worst))
    for error in report.errors:
        lines.append(f"error: {error}")
    lines.append(report.verdict())
    return lines


def _islands(quantization, locations: int = 3) -> list[str]:
    """Float islands grouped by the PyTorch ops behind them, with why and where."""
    if not quantization.quantized:
        return []
    types = " and ".join(quantization.types) or "8 bits"
    if not quantization.float_islands:
        return [f"float islands: none (every operation runs in {types})"]
    count = len(quantization.float_islands)
    lines = [f"quantized operations run in {types}",
             f"float islands: {count} (computed in float between DEQUANTIZE and QUANTIZE)"]
    groups: dict[tuple, list] = {}
    for island in quantization.float_islands:
        key = tuple(sorted({(s["kind"], s["reason"]) for s in island.sources}))
        groups.setdefault(key, []).append(island)
    for key, islands in groups.items():
        where = [s["location"] for island in islands for s in island.sources]
        lines.append(f"  {len(islands)} x " + ", ".join(kind for kind, _ in key))
        for kind, reason in key:
            lines.append(f"    {kind}: {reason}")
        lines.extend(f"      at {loc}" for loc in where[:locations])
        if len(where) > locations:
            lines.append(f"      ... and {len(where) - locations} more")
    return lines


def _model_forces(levels) -> bool:
    return any(r.level == levels.feature_level for r in levels.model_requirements)


def _numbers(report, worst: int) -> list[str]:
    lines = []
    accuracy = report.accuracy
    if accuracy.outputs:
        engine = f" (quantized engine {accuracy.quantized_engine})" \
            if report.quantization.quantized else ""
        lines.append(f"outputs against eager PyTorch{engine}, on {accuracy.backend}:")
        for o in accuracy.outputs:
            lines.append(f"  {o.name} {o.shape}: {o.describe(accuracy.engines)}")
    if report.conversion.partition is not None:
        lines.append("layer by layer: not available for a partitioned model (its regions are"
                     " separate NNAPI models)")
    if accuracy.layers:
        first = accuracy.first_bad_layer
        how = ", each from PyTorch's own input" if accuracy.isolated else \
            ", each from the converted layers before it"
        within = all(t.within for t in accuracy.layers)
        lines.append(f"layer by layer (host runtime{how},"
                     f" {counted(len(accuracy.layers), 'tensor')}):"
                     + (" all within tolerance" if within else
                        " no mismatch of the conversion" if first is None else ""))
        drift = accuracy.drift_summary()
        if drift:
            lines.append(f"  drift, not a mismatch: {drift} while every output matches: each"
                         " layer's rounding carried down the network; --isolated computes"
                         " each layer from PyTorch's own input to show what it adds alone")
        if first is not None:
            lines.append(f"  first layer over tolerance: {first.kind} {first.name}"
                         f" {first.shape}: {first.value()} (tolerance {first.limit()})")
            lines.append(f"      at {first.location}")
        disagreeing = [t for t in accuracy.layers if t.reference_disagrees]
        if disagreeing:
            first_engine, second_engine = accuracy.engines
            lines.append(f"  reference disagrees on {counted(len(disagreeing), 'layer')}:"
                         f" NNAPI agrees with PyTorch's {second_engine} kernels there, which"
                         f" differ from {first_engine}'s; first: {disagreeing[0].kind}"
                         f" {disagreeing[0].name} at {disagreeing[0].location}")
        if worst > 0:
            lines.append("  worst layers:")
            for t in accuracy.worst_layers(worst):
                note = f"  ({t.verdict})" if t.verdict in ("reference disagrees", "drift") \
                    else ""
                lines.append(f"    {t.kind:28} {t.name:14} {str(t.shape):18} {t.value():>18}"
                             f"  {t.location}{note}")
    return lines


