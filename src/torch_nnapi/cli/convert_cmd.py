"""``torch-nnapi convert``: a PyTorch model file -> a TorchScript module that runs on NNAPI.

The model is a TorchScript file, a pickled ``nn.Module`` (traced, or exported with
``--capture export``) or a ``.pt2`` file saved by ``torch.export.save`` (always exported).
``--input`` describes each model input (see ``_inputs.py``). ``--target-level N`` fails the
conversion, listing the operations at fault, when the result would need a higher NNAPI
feature level than N (1: Android 8.1, 2: Android 9, 3: Android 10, 4: Android 11; at 4 the
lowerings also use level-4 operations where they are shorter). ``--bundle`` bundles the
seeded example inputs (the same tensors every run) with ``torch.utils.bundled_inputs``.
``--check`` loads the saved file, runs it once and compares with the original model: a
verdict per output and exit code 2 when one is over the tolerance.

``--fallback`` runs on the CPU what NNAPI cannot (with ``--target-level``, also what a device
of that level would reject): the result runs NNAPI regions and CPU nodes in one module.
``--fallback-op KIND`` keeps an op on the CPU, ``--min-region-size N`` and ``--max-regions N``
bound the regions (``_fallback.py``). ``--device NAME_OR_JSON`` converts for a phone's driver
(``convert(..., device=, fallback=True)``; a .pte: ``NnapiPartitioner(device=)``): what it
cannot run stays on the CPU, and the command says how Android's steps change.
"""

from __future__ import annotations

import argparse
import sys

from ._commands import command
from ._devices import add_device_option, device_profiles, plans_summary
from ._errors import CliError, ExitCode, usage
from ._fallback import add_fallback_options, fallback_options
from ._inputs import add_input_options, example_inputs, layout_options, parse_input, spec_of
from ._loading import (
    check_input_count,
    load_model,
    output_path,
    run_eagerly,
    stored_examples,
    writing,
)
from ._progress import Progress
from ._pte_commands import convert_pte, pte_layout, pte_policy


def add_capture_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--capture", choices=["trace", "export"], default=None,
                   help="how an nn.Module is captured: torch.jit.trace (default) or"
                        " torch.export; a .pt2 file is always exported")


def _configure(p: argparse.ArgumentParser) -> None:
    from ..nnapi.codes import FeatureLevel

    p.add_argument("model", help="TorchScript file (torch.jit.save), a pickled nn.Module or"
                                 " a .pt2 file (torch.export.save)")
    add_capture_option(p)
    p.add_argument("-o", "--output", required=True,
                   help="where to save the converted module (not the model file itself);"
                        " a .pte name makes an ExecuTorch program")
    p.add_argument("--format", choices=["torchscript", "pte"], default=None,
                   help="a TorchScript module for PyTorch Mobile, or an ExecuTorch program"
                        " whose NNAPI regions run on NnapiBackend and the rest on ExecuTorch's"
                        " kernels (default: pte for a .pte output, else torchscript)")
    add_input_options(p, files=False, default_help="; a .pt2 file's default: the example"
                      " inputs it was exported with")
    p.add_argument("--target-level", type=int, choices=[int(v) for v in FeatureLevel],
                   help="fail if the result needs a higher NNAPI feature level (1: Android"
                        " 8.1, 2: Android 9, 3: Android 10, 4: Android 11), naming the"
                        " operations at fault")
    p.add_argument("--preference", default="sustained_speed",
                   choices=["sustained_speed", "fast_single_answer", "low_power"],
                   help="NNAPI compilation preference (default: %(default)s)")
    p.add_argument("--fp16", action="store_true",
                   help="let NNAPI compute float32 in float16 (relaxed precision)")
    p.add_argument("--lite", action="store_true",
                   help="save for PyTorch Mobile's lite interpreter (_save_for_lite_interpreter)")
    p.add_argument("--bundle", action="store_true",
                   help="bundle the example inputs (seeded: the same every run) with"
                        " torch.utils.bundled_inputs")
    p.add_argument("--check", action="store_true",
                   help="run the saved module once and compare with the model: a verdict"
                        " per output, exit code 2 over the tolerance")
    p.add_argument("--rtol", type=float, default=None, metavar="R",
                   help="--check's float tolerance, relative to each output's magnitude"
                        " (default 1e-4)")
    p.add_argument("--quanta", type=float, default=None, metavar="Q",
                   help="--check's tolerance for quantized outputs, in quanta (default 8)")
    p.add_argument("--compare", action="store_true",
                   help="print a layer-by-layer comparison with PyTorch (host runtime)")
    add_fallback_options(p)
    add_device_option(p, preference=False,
                      what="converts for the first: what it cannot run stays on PyTorch's CPU"
                           " (implies --fallback; a .pte: on ExecuTorch's kernels), saying"
                           " how Android's steps change (with --preference)")


@command("convert", "convert a PyTorch model to a TorchScript module that runs on NNAPI",
         _configure, torchscript=True, runs_models=True)
def run(args: argparse.Namespace) -> int:
    import torch

    from ..convert.api import convert_with_details
    from ..convert.errors import CaptureError, ConversionError, FeatureLevelError
    from ..convert.fallback.convert import PartitionedConversion

    specs = [parse_input(text) for text in args.input]
    as_pte = args.format == "pte" or (args.format is None and args.output.endswith(".pte"))
    profiles = device_profiles(args)
    args.fallback = args.fallback or bool(profiles)
    fallback = pte_policy(args) if as_pte else fallback_options(args)
    device = {"device": profiles[0]} if profiles else {}
    output_path(args.output, args.model)
    with Progress("convert") as progress:
        progress.step("loading the model")
        model = load_model(args.model)
        stored = None if specs else stored_examples(model)
        if stored is not None:
            specs = [spec_of(x) for x in stored]
        elif not specs:
            raise usage("give the model's inputs with --input (only a .pt2 file carries"
                        " example inputs)", "e.g. --input 1x3x224x224")
        check_input_count(model, len(specs))
        examples = stored or example_inputs(specs)
        progress.step("running it in PyTorch")
        expected = run_eagerly(model, examples)
        if as_pte:
            progress.step("lowering to ExecuTorch")
            return convert_pte(args, model, examples, pte_layout(specs),
                               dict(fallback, **device))
        options = dict(layout_options(specs), compilation_preference=args.preference,
                       relax_fp32_to_fp16=args.fp16, capture=args.capture)
        progress.step("converting")
        try:
            conversion = convert_with_details(model, examples, target_level=args.target_level,
                                              **options, **fallback, **device)
        except FeatureLevelError as e:
            progress.done()
            print(f"torch-nnapi convert: {e}", file=sys.stderr)
            return int(ExitCode.TARGET_LEVEL)
        except ConversionError as e:
            progress.done()
            print(f"torch-nnapi convert: {e}", file=sys.stderr)
            return int(ExitCode.CANNOT_CONVERT)
        except CaptureError as e:
            raise CliError(str(e), ExitCode.CANNOT_CONVERT) from None
        module = conversion.module
        if args.bundle:
            import torch.utils.bundled_inputs as bundled

            bundled.augment_model_with_bundled_inputs(
                module, [tuple(bundled.bundle_large_tensor(x) for x in examples)])
        progress.step("saving")
        with writing(args.output):
            if args.lite:
                module._save_for_lite_interpreter(args.output)
            else:
                torch.jit.save(module, args.output)
        if isinstance(conversion, PartitionedConversion):
            report, operation_count = conversion.report, 0
        else:
            report, operation_count = None, len(conversion.model.operations)
        if args.compare and report is None:
            from ..convert.tools.compare import compare_layers

            progress.step("comparing layer by layer")
            diffs = compare_layers(model, examples, **options)
        changes = _device_changes(model, examples, conversion, profiles, args, options,
                                  fallback, progress) if profiles else []
        verdicts = None
        if args.check:  # on the saved file: it must load and run as saved
            progress.step("running the saved module")
            verdicts = _check(args, conversion, expected, examples)
    if report is not None:
        print(f"converted in {conversion.seconds:.2f} s into {report.summary()}; feature"
              f" level {conversion.feature_level} (Android"
              f" {_android(conversion.feature_level)})")
        print("\n".join(report.render()[1:]))
    else:
        print(f"converted in {conversion.seconds:.2f} s: {operation_count}"
              f" NNAPI operations, feature level {conversion.feature_level}"
              f" (Android {_android(conversion.feature_level)})")
    print("".join(line + "\n" for line in changes), end="")
    print(f"saved {args.output}")
    if args.compare and report is not None:
        print("layer-by-layer comparison: not available for a partitioned model (use"
              " --check)")
    elif args.compare:
        for diff in diffs:
            print(diff)
    if verdicts is None:
        return int(ExitCode.OK)
    for line in verdicts.lines:
        print(line)
    return int(ExitCode.OK if verdicts.ok else ExitCode.MISMATCH)


def _device_changes(model, examples, conversion, profiles, args, options, fallback,
                    progress) -> list[str]:
    """``--device``: Android's steps for the model converted without ``device=`` and with
    it, in two lines."""
    from ..convert.tools.device_plan import plans_for_model, plans_of_conversion
    from ..nnapi.devices import REFERENCE_NAME
    from ..nnapi.errors import NnapiError

    progress.step("planning for the devices")
    drivers = ", ".join(p.name for p in profiles if p.name != REFERENCE_NAME)
    try:
        before = plans_for_model(model, examples, profiles, args.preference,
                                 target_level=args.target_level, **options, **fallback)
        after = plans_of_conversion(conversion, profiles, args.preference)
    except NnapiError as e:
        raise CliError(f"the devices cannot run the model: {e}", ExitCode.RUN_FAILED) from None
    return [f"devices {drivers} + {REFERENCE_NAME} ({args.preference}): converted without"
            f" --device, {plans_summary(before)}",
            f"converted for {profiles[0].name}: {plans_summary(after)}"]


def _android(level: int) -> str:
    from ..nnapi.codes import FeatureLevel

    level = FeatureLevel(level)
    return f"{level.android}, API {level.api_level}"


class _Verdicts:
    def __init__(self, lines: list[str], ok: bool):
        self.lines, self.ok = lines, ok


def _check(args: argparse.Namespace, conversion, expected, examples) -> _Verdicts:
    import torch

    from ..convert.tools.check import FLOAT_TOLERANCE, QUANTA_TOLERANCE, compare_outputs
    from .run_cmd import run_module

    if args.lite:
        from torch.jit.mobile import _load_for_lite_interpreter

        _load_for_lite_interpreter(args.output)
    saved = torch.jit.load(args.output)
    actual, _, backend = run_module(saved, examples)
    checks, errors = compare_outputs(
        actual, expected, conversion,
        FLOAT_TOLERANCE if args.rtol is None else args.rtol,
        QUANTA_TOLERANCE if args.quanta is None else args.quanta)
    lines = [f"check ({backend}): {c.name} {c.shape}: {c.describe()}" for c in checks]
    lines += [f"check: error: {e}" for e in errors]
    ok = not errors and all(c.ok for c in checks)
    lines.append("result: OK, the saved module matches the model" if ok else
                 "result: MISMATCH, the saved module does not match the model")
    return _Verdicts(lines, ok)
