"""``torch-nnapi convert``: a PyTorch model file -> a TorchScript module running on NNAPI.

``--input`` describes one model input: ``1x3x224x224`` (a dimension written ``?224`` is
flexible: resolved at load time, 224 is the size the conversion is checked with), then
``:``-separated options: ``nhwc`` or ``nchw`` (the order NNAPI gets a 4-D input in; by
default the converter chooses, channels-last when that lowers the feature level), a dtype
(``float32``, ``int64``, ``int32``), or ``quint8=SCALE,ZERO_POINT`` for a quantized input.

``--target-level N`` fails the conversion, listing the operations at fault, when the result
would need a higher NNAPI feature level than N (1: Android 8.1, 2: Android 9, 3: Android 10).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Optional

from ._commands import command

DTYPES = ("float32", "int64", "int32", "quint8")


@dataclass
class InputSpec:
    shape: tuple[int, ...]
    flexible: tuple[int, ...] = ()
    nhwc: Optional[bool] = None  # None: the converter chooses
    dtype: str = "float32"
    scale: float = 1.0
    zero_point: int = 0

    def example(self, seed: int = 0):
        """A random tensor of this shape and dtype (token ids: small non-negative ints)."""
        import torch

        g = torch.Generator().manual_seed(seed)
        if self.dtype in ("int64", "int32"):
            return torch.randint(0, 10, self.shape, generator=g,
                                 dtype=getattr(torch, self.dtype))
        x = torch.randn(self.shape, generator=g)
        if self.dtype == "quint8":
            return torch.quantize_per_tensor(x, self.scale, self.zero_point, torch.quint8)
        return x


def parse_input(text: str) -> InputSpec:
    """``1x3x?224x?224:nhwc`` -> InputSpec; raises ValueError with the reason."""
    shape_text, *options = text.split(":")
    dims, flexible = [], []
    for i, part in enumerate(shape_text.lower().split("x")):
        if part.startswith("?"):
            flexible.append(i)
            part = part[1:]
        if not part.isdigit() or int(part) <= 0:
            raise ValueError(f"--input {text!r}: dimension {i} ({part!r}) is not a positive"
                             " integer")
        dims.append(int(part))
    spec = InputSpec(tuple(dims), tuple(flexible))
    for option in options:
        name, _, value = option.partition("=")
        if name in ("nhwc", "nchw"):
            if len(dims) != 4:
                raise ValueError(f"--input {text!r}: {name} needs a 4-D shape")
            spec.nhwc = name == "nhwc"
        elif name in DTYPES:
            spec.dtype = name
            if name == "quint8":
                try:
                    scale, zero_point = value.split(",")
                    spec.scale, spec.zero_point = float(scale), int(zero_point)
                except ValueError:
                    raise ValueError(f"--input {text!r}: write quint8=SCALE,ZERO_POINT")\
                        from None
        else:
            raise ValueError(f"--input {text!r}: unknown option {option!r} (nhwc, nchw,"
                             f" {', '.join(DTYPES)})")
    return spec


def example_inputs(specs: list[InputSpec]) -> tuple:
    """A random example of each input (input i seeded with i)."""
    return tuple(s.example(i) for i, s in enumerate(specs))


def layout_options(specs: list[InputSpec]) -> dict:
    """The converter's ``nhwc`` and ``flexible`` options that the inputs ask for."""
    return dict(nhwc=[s.nhwc for s in specs],
                flexible={i: list(s.flexible) for i, s in enumerate(specs) if s.flexible})


def load_model(path: str):
    """A TorchScript file, or a whole nn.Module saved with torch.save."""
    import torch

    try:
        return torch.jit.load(path, map_location="cpu")
    except RuntimeError:
        pass
    model = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"{path} holds a {type(model).__name__}, not a model (save a"
                         " TorchScript module or a whole nn.Module)")
    return model


def _configure(p: argparse.ArgumentParser) -> None:
    from ..nnapi.codes import FeatureLevel

    p.add_argument("model", help="TorchScript file (torch.jit.save) or a pickled nn.Module")
    p.add_argument("-o", "--output", required=True, help="where to save the converted module")
    p.add_argument("--input", action="append", required=True, metavar="SPEC",
                   help="an input: 1x3x224x224, ?-prefixed dims flexible, options :nhwc,"
                        " :nchw, :int64, :quint8=SCALE,ZP (repeat per input)")
    p.add_argument("--target-level", type=int, choices=[int(v) for v in FeatureLevel],
                   help="fail if the result needs a higher NNAPI feature level (1: Android"
                        " 8.1, 2: Android 9, 3: Android 10), naming the operations at fault")
    p.add_argument("--preference", default="sustained_speed",
                   choices=["sustained_speed", "fast_single_answer", "low_power"],
                   help="NNAPI compilation preference (default: %(default)s)")
    p.add_argument("--fp16", action="store_true",
                   help="let NNAPI compute float32 in float16 (relaxed precision)")
    p.add_argument("--lite", action="store_true",
                   help="save for PyTorch Mobile's lite interpreter (_save_for_lite_interpreter)")
    p.add_argument("--bundle", action="store_true",
                   help="bundle random inputs of the given shapes (torch.utils.bundled_inputs)")
    p.add_argument("--check", action="store_true",
                   help="run the result once on random inputs and compare with the model")
    p.add_argument("--compare", action="store_true",
                   help="print a layer-by-layer comparison with PyTorch (host runtime)")


@command("convert", "convert a PyTorch model to a TorchScript module that runs on NNAPI",
         _configure, torchscript=True, runs_models=True)
def run(args: argparse.Namespace) -> int:
    import torch

    from ..convert.api import convert_with_details
    from ..convert.errors import ConversionError

    specs = [parse_input(text) for text in args.input]
    model = load_model(args.model)
    examples = example_inputs(specs)
    options = dict(layout_options(specs), compilation_preference=args.preference,
                   relax_fp32_to_fp16=args.fp16)
    try:
        conversion = convert_with_details(model, examples, target_level=args.target_level,
                                          **options)
    except ConversionError as e:
        print(f"torch-nnapi convert: {e}", file=sys.stderr)
        return 1
    module = conversion.module
    print(f"converted in {conversion.seconds:.2f} s: {len(conversion.model.operations)} NNAPI"
          f" operations, feature level {conversion.feature_level}"
          f" (Android {_android(conversion.feature_level)})")
    if args.compare:
        from ..convert.compare import compare_layers

        for diff in compare_layers(model, examples, **options):
            print(diff)
    if args.bundle:
        import torch.utils.bundled_inputs as bundled

        bundled.augment_model_with_bundled_inputs(
            module, [tuple(bundled.bundle_randn(*s.shape) if s.dtype == "float32"
                           else bundled.bundle_large_tensor(s.example(i))
                           for i, s in enumerate(specs))])
    if args.lite:
        module._save_for_lite_interpreter(args.output)
    else:
        torch.jit.save(module, args.output)
    print(f"saved {args.output}")
    if args.check:  # on the saved file: it must load and run as saved
        if args.lite:
            from torch.jit.mobile import _load_for_lite_interpreter

            _load_for_lite_interpreter(args.output)
            saved = torch.jit.load(args.output)
        else:
            saved = torch.jit.load(args.output)
        _check(model, saved, examples)
    return 0


def _android(level: int) -> str:
    from ..nnapi.codes import FeatureLevel

    level = FeatureLevel(level)
    return f"{level.android}, API {level.api_level}"


def _check(model, module, examples) -> None:
    import torch

    from .run_cmd import run_module

    with torch.no_grad():
        expected = model(*examples)
    actual, _, backend = run_module(module, examples)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    actual = list(actual) if isinstance(actual, (tuple, list)) else [actual]
    for i, (a, e) in enumerate(zip(actual, expected)):
        if e.is_quantized:
            diff = (a.int_repr().int() - e.int_repr().int()).abs().max().item()
            print(f"check ({backend}): output {i} within {diff} quanta of PyTorch's")
        else:
            a, e = (a.dequantize() if a.is_quantized else a).float(), e.float()
            scale = max(e.abs().max().item(), 1e-30)
            rel = (a - e).abs().max().item() / scale
            print(f"check ({backend}): output {i} max error {rel:.2e} of its magnitude")
