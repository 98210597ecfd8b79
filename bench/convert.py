"""Converter speed against PyTorch's prototype, and converted-model latency against eager.

For each model of the test zoo (tests/convert/zoo.py): the time torch_nnapi.convert takes,
from the nn.Module to the TorchScript module, against torch.backends._nnapi
(``torch.jit.trace`` + ``convert_model_to_nnapi``, the same starting point) on the models
the prototype can convert; then the latency of the converted model on the host runtime
(through PyTorch's NNAPI runtime and torch-nnapi's libneuralnetworks.so when it is built,
else directly) against eager PyTorch, both on 2 threads. Target: conversion no slower than
the prototype.

The prototype handles no in-place ops, so both converters get the zoo models with
``inplace=False`` everywhere and ResNet's residual ``out = out + identity`` (our converter
handles either).

    PYTHONPATH=src python3 bench/convert.py [--size 64] [--runs 5] [--models a,b]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "2"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import (  # noqa: E402
    backend_name,
    eager_and_converted,
    torch_runtime_available,
)
from tests.convert import zoo  # noqa: E402
from torch_nnapi.convert.api import Conversion, convert_with_details  # noqa: E402

THREADS = 2


def _image(size: int) -> torch.Tensor:
    return torch.randn(1, 3, size, size)


def _tokens(size: int) -> torch.Tensor:
    return torch.randint(0, 100, (1, min(size, 32)))


# name -> (model factory, example input for a given --size)
MODELS = {
    "mobilenet_v2": (lambda: zoo.MobileNetV2(num_classes=1000), _image),
    # out = out + identity instead of out += identity: the prototype has no aten::add_
    "resnet18": (lambda: zoo.ResNet18(num_classes=1000, inplace_add=False), _image),
    "mobilenet_v3_small": (lambda: zoo.MobileNetV3Small(num_classes=1000), _image),
    "shufflenet_v2": (lambda: zoo.ShuffleNetV2(num_classes=1000), _image),
    "unet": (lambda: zoo.UNet(), _image),
    "transformer": (lambda: zoo.TransformerEncoder(), _tokens),
}



def _prototype(model: torch.nn.Module, x: torch.Tensor) -> float | None:
    from torch.backends._nnapi.prepare import convert_model_to_nnapi

    try:
        start = time.perf_counter()
        convert_model_to_nnapi(torch.jit.trace(model, x), x)
        return time.perf_counter() - start
    except Exception:  # noqa: BLE001 - the prototype does not convert every model
        return None


def _ours(model: torch.nn.Module, x: torch.Tensor) -> tuple[float, Conversion]:
    start = time.perf_counter()
    conversion = convert_with_details(model, x)
    seconds = time.perf_counter() - start
    if not isinstance(conversion, Conversion):  # only fallback=True partitions
        raise TypeError(f"expected a whole-model Conversion, got {type(conversion).__name__}")
    return seconds, conversion



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="input height and width")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per latency")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    warnings.simplefilter("ignore")
    through_torch = torch_runtime_available()
    backend = backend_name(through_torch)
    print(f"images 1x3x{args.size}x{args.size}, tokens 1x{min(args.size, 32)}, {THREADS} threads,"
          f" converted models run on the {backend}")
    # JIT start-up costs are paid once, by whichever converter runs first: pay them here
    warm = zoo.ResNet18(num_classes=10).eval()
    _ours(warm, torch.randn(1, 3, 32, 32))
    _prototype(warm, torch.randn(1, 3, 32, 32))
    header = (f"{'model':20} {'ops':>5} {'ours s':>8} {'prototype s':>12} {'ratio':>6}"
              f" {'eager ms':>9} {'nnapi ms':>9} {'slowdown':>9}")
    print(header)
    print("-" * len(header))
    slower = []
    for name in args.models.split(","):
        torch.manual_seed(0)
        factory, example = MODELS[name]
        model = zoo.randomize_batchnorm(factory())
        for m in model.modules():
            if hasattr(m, "inplace"):
                # torch types Module.__setattr__ for tensors and submodules; this is a flag
                m.inplace = False  # type: ignore[assignment]
        x = example(args.size)
        ours, conversion = _ours(model, x)
        proto = _prototype(model, x)
        module = conversion.module
        eager, latency = eager_and_converted(model, module, (x,), args.runs, through_torch)
        ratio = f"{ours / proto:6.2f}" if proto else "     -"
        if proto and ours > proto:
            slower.append(name)
        print(f"{name:20} {len(conversion.model.operations):5} {ours:8.2f}"
              f" {(f'{proto:12.2f}' if proto else '   (fails)'):>12} {ratio}"
              f" {eager * 1e3:9.1f} {latency * 1e3:9.1f} {latency / eager:8.1f}x")
    print("target (conversion no slower than the prototype):",
          "met" if not slower else f"missed on {', '.join(slower)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
