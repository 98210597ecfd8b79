"""Quantization accuracy: per-tensor weights (TorchScript path) against per-channel weights
(ExecuTorch path), as the SQNR of the NNAPI model's output against the float model's.

For torchvision's MobileNetV2, MobileNetV3-large and ResNet-18 (random weights with
non-trivial batch norm statistics), each quantized twice with PT2E on the same calibration
images: with per-tensor int8 weights, converted with ``torch_nnapi.convert`` and run through
PyTorch's NNAPI runtime (the host runtime when libneuralnetworks.so is not built), and with
per-channel weights (TENSOR_QUANT8_SYMM_PER_CHANNEL), lowered with ``to_pte`` and run through
ExecuTorch's runtime with NnapiBackend on torch-nnapi's libneuralnetworks.so. SQNR (dB) =
10 log10(sum f^2 / sum (f - q)^2) over the outputs of ``--images`` fresh images; higher is
better. The PT2E models' own SQNR is printed beside, as what the NNAPI models should match.

    PYTHONPATH=src:. python3 bench/quant_accuracy.py [--size 160] [--calibration 8]
        [--images 4] [--target-level 3]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import backend_name, torch_runtime_available  # noqa: E402
from tests.realmodels.classification import build  # noqa: E402
from torch_nnapi.convert import set_num_threads  # noqa: E402
from torch_nnapi.convert.api import convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.host import run_on_host  # noqa: E402
from torch_nnapi.quantization import quantize  # noqa: E402

MODELS = ("mobilenet_v2", "mobilenet_v3_large", "resnet18")
Run = Callable[[torch.Tensor], torch.Tensor]


def sqnr(reference: Sequence[torch.Tensor], got: Sequence[torch.Tensor]) -> float:
    """Signal-to-quantization-noise ratio in dB of ``got`` against ``reference``."""
    signal = sum(float(r.double().pow(2).sum()) for r in reference)
    noise = sum(float((r.double() - g.double()).pow(2).sum())
                for r, g in zip(reference, got, strict=True))
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def _torchscript_runner(model: torch.nn.Module, x: torch.Tensor, through_torch: bool) -> Run:
    module = convert_with_details(model, (x,)).module
    if through_torch:
        return lambda image: module(image)
    return lambda image: run_on_host(module, image)


def _executorch_runner(model: torch.nn.Module, x: torch.Tensor, target_level: int,
                       runtime: Any) -> Run:
    from torch_nnapi.executorch import to_pte

    program = runtime.load_program(to_pte(model, (x,), target_level=target_level))
    return _Method(program, program.load_method("forward"))


@dataclass
class _Method:
    """An ExecuTorch method and the program it lives in (freed with it)."""

    program: Any
    method: Any

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.method.execute([image])[0]
        return out


def _row(name: str, args: argparse.Namespace, through_torch: bool, runtime: Any) -> str:
    model, _ = build(name)
    shape = (1, 3, args.size, args.size)
    generator = torch.Generator().manual_seed(1)
    calibration = [torch.randn(shape, generator=generator) for _ in range(args.calibration)]
    images = [torch.randn(shape, generator=generator) for _ in range(args.images)]
    with torch.no_grad():
        reference = [model(image) for image in images]
    columns = []
    for per_channel in (False, True):
        quantized = quantize(model, (calibration[0],), calibration,
                             target_level=args.target_level, per_channel=per_channel)
        run = _executorch_runner(quantized, images[0], args.target_level, runtime) \
            if per_channel else _torchscript_runner(quantized, images[0], through_torch)
        with torch.no_grad():
            pt2e = [quantized(image) for image in images]
            nnapi = [run(image) for image in images]
        columns += [sqnr(reference, pt2e), sqnr(reference, nnapi)]
    return f"{name:20}" + "".join(f" {c:13.2f}" for c in columns)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=160, help="input height and width")
    parser.add_argument("--calibration", type=int, default=8, help="calibration images")
    parser.add_argument("--images", type=int, default=4, help="images the SQNR is over")
    parser.add_argument("--target-level", type=int, default=3, choices=[3, 4],
                        help="3: uint8 activations (Android 10); 4: int8 (Android 11)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    import torch_nnapi.executorch as nnapi_executorch

    nnapi_executorch.load_backend()
    from executorch.runtime import Runtime

    through_torch = torch_runtime_available()
    print(f"SQNR (dB) against the float model, images 1x3x{args.size}x{args.size},"
          f" {args.calibration} calibration images, {args.images} evaluated, feature level"
          f" {args.target_level}; per-tensor on the {backend_name(through_torch)},"
          f" per-channel through ExecuTorch's runtime with NnapiBackend")
    header = (f"{'model':20} {'tensor PT2E':>13} {'tensor NNAPI':>13}"
              f" {'channel PT2E':>13} {'channel NNAPI':>13}")
    print(header)
    print("-" * len(header))
    runtime = Runtime.get()
    for name in args.models.split(","):
        print(_row(name, args, through_torch, runtime), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
