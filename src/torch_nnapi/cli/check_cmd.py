"""``torch-nnapi check``: will this PyTorch model run on NNAPI, and correctly?

Converts the original model for the given inputs (same ``--input`` syntax as ``convert``)
and reports, without stopping at the first problem: unsupported operations with their
source locations; the feature level the result needs and which operations force it;
operation counts and inserted layout transposes; with ``--target-level``, what a device of
that level would reject; the converted module run through PyTorch's NNAPI runtime against
eager PyTorch; and a layer-by-layer comparison naming the first layer that drifts.

Exit code: 0 all good, 1 cannot convert, 2 converts but disagrees with PyTorch (or fails to
run), 3 a device of the target level would reject it.
"""

from __future__ import annotations

import argparse
import json

from ._commands import command


def _configure(p: argparse.ArgumentParser) -> None:
    from ..nnapi.codes import FeatureLevel

    p.add_argument("model", help="the original model: a TorchScript file or a pickled nn.Module")
    p.add_argument("--input", action="append", required=True, metavar="SPEC",
                   help="an input as for convert: 1x3x224x224, ?-prefixed dims flexible,"
                        " options :nhwc, :nchw, :int64, :quint8=SCALE,ZP (repeat per input)")
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
                        " PyTorch's)")
    p.add_argument("--no-layers", action="store_true",
                   help="skip the layer-by-layer comparison")
    p.add_argument("--worst", type=int, default=5, metavar="N",
                   help="how many of the worst layers to list (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


@command("check", "check that a PyTorch model converts, which NNAPI feature level it needs,"
         " and that the result matches PyTorch layer by layer", _configure, torchscript=True,
         runs_models=True)
def run(args: argparse.Namespace) -> int:
    from ..convert.check import FLOAT_TOLERANCE, QUANTA_TOLERANCE, check_model
    from .convert_cmd import example_inputs, layout_options, load_model, parse_input

    specs = [parse_input(text) for text in args.input]
    model = load_model(args.model)
    report = check_model(
        model, example_inputs(specs), **layout_options(specs),
        float_tolerance=FLOAT_TOLERANCE if args.rtol is None else args.rtol,
        quanta_tolerance=QUANTA_TOLERANCE if args.quanta is None else args.quanta,
        target_level=args.target_level, host=args.host, layers=not args.no_layers,
        engine=None if args.quantized_engine == "default" else args.quantized_engine)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=str))
    else:
        print("\n".join(render(report, specs, args.worst)))
    return report.exit_code


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
    if report.unsupported:
        lines.append(report.unsupported_text)
    if report.converted:
        level = FeatureLevel(report.feature_level)
        ops = sum(report.operation_counts.values())
        lines.append(f"converts: {ops} NNAPI operations in {report.conversion_seconds:.2f} s")
        lines.append(f"feature level {int(level)} (Android {level.android}, API"
                     f" {level.api_level})" + (", forced by:" if report.level_forced_by
                                               or _model_forces(report) else ""))
        for requirement in report.model_requirements:
            if requirement.level == report.feature_level:
                lines.append(f"  {requirement.reason}")
        lines.extend(render_operations(report.level_forced_by, report.feature_level - 1))
        lines.append("operations: " + ", ".join(f"{n} {name}" for name, n in
                                                report.operation_counts.items()))
        lines.append(f"layout transposes inserted: {len(report.transposes)}")
        for t in report.transposes:
            dims = "x".join(map(str, t.input_shape))
            lines.append(f"  operation {t.index}: TRANSPOSE [{dims}] by {t.permutation}, for"
                         f" {t.origin or 'an unknown node'}")
        if report.target_level is not None:
            target = FeatureLevel(report.target_level)
            rejected = report.rejected
            if report.fits_target:
                lines.append(f"target level {int(target)} (Android {target.android}): every"
                             " operation is supported")
            else:
                lines.append(f"target level {int(target)} (Android {target.android}): a device"
                             f" would reject {len(rejected)} operation"
                             f"{'s' if len(rejected) != 1 else ''}")
                for requirement in report.rejected_by_model:
                    lines.append(f"  the model: {requirement.reason}")
                lines.extend(render_operations(rejected, report.target_level))
        lines.extend(_numbers(report, worst))
    for error in report.errors:
        lines.append(f"error: {error}")
    lines.append(_verdict(report))
    return lines


def _model_forces(report) -> bool:
    return any(r.level == report.feature_level for r in report.model_requirements)


def _value(check) -> str:
    if check.unit == "quanta":
        return f"{check.error:g} quanta"
    return f"{check.error:.2g} relative"


def _limit(check) -> str:
    return f"{check.tolerance:g} quanta" if check.unit == "quanta" else f"{check.tolerance:g}"


def _numbers(report, worst: int) -> list[str]:
    lines = []
    if report.outputs:
        engine = f" (quantized engine {report.quantized_engine})" if report.quantized else ""
        lines.append(f"outputs against eager PyTorch{engine}, on {report.backend}:")
        for o in report.outputs:
            lines.append(f"  {o.name} {o.shape}: {_value(o)} (tolerance {_limit(o)})"
                         f" {'ok' if o.ok else 'MISMATCH'}")
    if report.layers:
        first = report.first_bad_layer
        lines.append(f"layer by layer (host runtime, {len(report.layers)} tensors):"
                     + (" all within tolerance" if first is None else ""))
        if first is not None:
            lines.append(f"  first layer over tolerance: {first.kind} {first.name}"
                         f" {first.shape}: {_value(first)} (tolerance {_limit(first)})")
            lines.append(f"      at {first.location}")
        if worst > 0:
            lines.append("  worst layers:")
            for t in report.worst_layers(worst):
                lines.append(f"    {t.kind:28} {t.name:14} {str(t.shape):18} {_value(t):>18}"
                             f"  {t.location}")
    return lines


def _verdict(report) -> str:
    code = report.exit_code
    if code == 1:
        if report.unsupported:
            kinds = len({u.kind for u in report.unsupported})
            return f"result: FAIL, cannot convert ({kinds} unsupported operation" \
                   f"{'s' if kinds != 1 else ''})"
        return "result: FAIL, cannot convert"
    if code == 2:
        return "result: FAIL, the converted model does not match PyTorch"
    if code == 3:
        return (f"result: FAIL, converts and matches PyTorch, but needs feature level"
                f" {report.feature_level} (target {report.target_level})")
    return (f"result: OK, converts and matches PyTorch; needs NNAPI feature level"
            f" {report.feature_level}")
