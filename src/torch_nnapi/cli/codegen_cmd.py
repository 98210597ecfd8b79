"""``torch-nnapi codegen``: a model as one standalone, editable Python file and its weights.

The model (a pickled ``nn.Module`` or a ``.pt2`` file) is captured with torch.export for the
``--input`` shapes and written as an ``nn.Module`` in ``torch`` / ``torch.nn.functional``
calls (``torch_nnapi.trace_to_code``). ``--stage prepared`` writes it as prepared for NNAPI
quantization (PT2E observers, calibrated on random inputs) and ``--stage quantized`` as
quantized (quantize/dequantize around what NNAPI runs in 8 bits), i.e. what ``convert``
gets from ``torch_nnapi.quantize``. The file is imported and checked against the model.

Exit code 0: written and matching; 1: the model cannot be captured or written (the node is
named); the other codes as for every command.
"""

from __future__ import annotations

import argparse

from ._commands import command
from ._errors import CliError, ExitCode, bad_file
from ._inputs import add_input_options, example_inputs, parse_input
from ._loading import check_input_count, load_model, output_path

STAGES = ("float", "prepared", "quantized")


def _configure(p: argparse.ArgumentParser) -> None:
    from ..nnapi.codes import FeatureLevel

    p.add_argument("model", help="a pickled nn.Module or a .pt2 file (torch.export.save)")
    p.add_argument("-o", "--output", required=True, help="the Python file to write")
    add_input_options(p, required=True, files=False)
    p.add_argument("--weights", help="the weights file (default: OUTPUT with .pth)")
    p.add_argument("--class-name", help="the module's class name (default: the model's)")
    p.add_argument("--stage", choices=STAGES, default="float",
                   help="what to write: the float model (default), the model prepared for"
                        " NNAPI quantization, or quantized")
    p.add_argument("--target-level", type=int, default=3,
                   choices=[int(v) for v in FeatureLevel],
                   help="the NNAPI feature level quantization is for (default: %(default)s)")
    p.add_argument("--calibration", type=int, default=8, metavar="N",
                   help="random input batches to calibrate on (default: %(default)s)")


@command("codegen", "write a model as one standalone Python file (an nn.Module) and its"
         " weights", _configure)
def run(args: argparse.Namespace) -> int:
    import torch

    from ..convert.errors import CaptureError
    from ..convert.tools.codegen import trace_to_code
    from ..convert.tools.codegen_ops import CodegenError

    specs = [parse_input(text) for text in args.input]
    output_path(args.output, args.model)
    if args.weights:
        output_path(args.weights, args.model)
    if args.calibration < 1:
        raise CliError("--calibration must be 1 or more", ExitCode.USAGE)
    model = load_model(args.model)
    if isinstance(model, torch.jit.ScriptModule):
        raise bad_file(f"model {args.model}: a TorchScript module, which torch.export cannot"
                       " capture", "give the pickled nn.Module or a .pt2 file")
    check_input_count(model, len(specs))
    examples = example_inputs(specs)
    flexible = {i: list(s.flexible) for i, s in enumerate(specs) if s.flexible}
    class_name = args.class_name or _class_name(model)
    try:
        if args.stage != "float":
            from ..quantization.api import calibrate, convert_prepared, prepare

            model = prepare(model, examples, target_level=args.target_level, flexible=flexible)
            calibrate(model, [tuple(s.example(1000 * batch + i) for i, s in enumerate(specs))
                              for batch in range(1, args.calibration + 1)])
            if args.stage == "quantized":
                model = convert_prepared(model)
        elif flexible:
            from ..convert.capture.export import export_module
            from ..convert.capture.frontend import flexible_per_input

            model = export_module(model, examples, flexible_per_input(examples, flexible))
        result = trace_to_code(model, examples, args.output, class_name=class_name,
                               weights_path=args.weights)
    except (CaptureError, CodegenError) as e:
        raise CliError(str(e), ExitCode.CANNOT_CONVERT) from None
    print(f"wrote {result.path} (class {result.class_name}) and {result.weights_path};"
          f" it matches the model within {result.max_error:.1e}")
    return 0


def _class_name(model) -> str:
    import torch

    if isinstance(model, (torch.export.ExportedProgram, torch.fx.GraphModule)):
        return "CapturedModel"
    return type(model).__name__
