"""Conversion time and latency against eager for the model families of issue 9: torchvision
CNNs, vision transformers (ViT, Swin, MaxViT), segmentation networks, and the tests' own
transformers (text encoder, GPT-style decoder, Whisper-style audio encoder).

For each model: the time ``torch_nnapi.convert`` takes (nn.Module to TorchScript module),
then the median latency of the converted model through PyTorch's NNAPI runtime on
torch-nnapi's libneuralnetworks.so (the host runtime directly when the library is not
built) against eager PyTorch, both on 2 threads, and the output's error relative to its
magnitude. Random weights with non-trivial batch norms (tests/realmodels/checks.py).
``--threads`` sets every pool (PyTorch's, the runtime's, OpenBLAS's) to the same count;
``--gemm`` picks what the runtime's float convolutions multiply with (oneDNN's sgemm when
installed, else NumPy's OpenBLAS), to compare the two in one process.

    PYTHONPATH=src python3 bench/models.py [--runs 3] [--threads 2] [--gemm onednn|numpy]
        [--models swin_t,text_encoder]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "2"

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import (  # noqa: E402
    backend_name,
    eager_and_converted,
    torch_runtime_available,
)
from tests.convert import transformers  # noqa: E402
from tests.realmodels.checks import nontrivial_weights  # noqa: E402
from tests.realmodels.torchvision_support import load_torchvision  # noqa: E402
from torch_nnapi.convert.api import Conversion, convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.host import run_on_host  # noqa: E402
from torch_nnapi.convert.tools.threads import set_num_threads  # noqa: E402
from torch_nnapi.runtime import native  # noqa: E402

THREADS = 2


class MainOutput(nn.Module):
    """A segmentation model's "out" (torchvision returns a dict)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model(x)["out"]
        return out


Example = tuple[nn.Module, tuple[torch.Tensor, ...]]


def _torchvision(name: str, size: int, **options: None) -> Callable[[], Example]:
    def make() -> Example:
        models = load_torchvision().models
        model = models.get_model(name, weights=None, **options)
        if "weights_backbone" in options:
            model = MainOutput(model)
        return nontrivial_weights(model), (torch.randn(1, 3, size, size),)
    return make


def _text_encoder() -> Example:
    ids = torch.randint(0, 120, (1, 32))
    return transformers.TextEncoder().eval(), (ids, torch.ones_like(ids))


# family -> model name -> factory returning (model, example inputs)
FAMILIES: dict[str, dict[str, Callable[[], Example]]] = {
    "cnn": {name: _torchvision(name, 224) for name in
            ("resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny",
             "regnet_y_400mf")},
    "vision transformer": {"vit_b_16": _torchvision("vit_b_16", 224),
                           "swin_t": _torchvision("swin_t", 224),
                           "swin_v2_t": _torchvision("swin_v2_t", 256),
                           "maxvit_t": _torchvision("maxvit_t", 224)},
    "segmentation": {name: _torchvision(name, 224, weights_backbone=None) for name in
                     ("lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large",
                      "fcn_resnet50")},
    "transformer": {"text_encoder": _text_encoder,
                    "decoder": lambda: (transformers.Decoder().eval(),
                                        (torch.randint(0, 100, (1, 32)),)),
                    "audio_encoder": lambda: (transformers.AudioEncoder(frames=64).eval(),
                                              (torch.randn(1, 16, 64),))},
}


def _measure(model: nn.Module, module: torch.jit.ScriptModule,
             inputs: tuple[torch.Tensor, ...], runs: int, through_torch: bool
             ) -> tuple[float, float, torch.Tensor, torch.Tensor]:
    """Median seconds of eager and of the converted module, and their outputs."""
    eager, latency = eager_and_converted(model, module, inputs, runs, through_torch)
    with torch.no_grad():
        expected = model(*inputs)
    actual = module(*inputs) if through_torch else run_on_host(module, *inputs)
    return eager, latency, expected, actual


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per latency")
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help=f"threads of eager and of the runtime (default {THREADS})")
    parser.add_argument("--gemm", choices=native.SGEMM_LIBRARIES,
                        help="the runtime's float sgemm (default: oneDNN when installed)")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    set_num_threads(args.threads)
    if args.gemm:
        try:
            native.select_sgemm(args.gemm)
        except ValueError as refused:
            parser.error(str(refused))
    warnings.simplefilter("ignore")
    wanted = set(filter(None, args.models.split(",")))
    through_torch = torch_runtime_available()
    print(f"{args.threads} threads; converted models run on the"
          f" {backend_name(through_torch)}; float sgemm: {native.sgemm_library()}")
    header = (f"{'family':18} {'model':28} {'ops':>5} {'level':>5} {'convert s':>9}"
              f" {'eager ms':>9} {'nnapi ms':>9} {'ratio':>6} {'error':>8}")
    print(header)
    print("-" * len(header))
    for family, models in FAMILIES.items():
        for name, make in models.items():
            if wanted and name not in wanted:
                continue
            torch.manual_seed(0)
            model, inputs = make()
            conversion = convert_with_details(model, inputs)
            assert isinstance(conversion, Conversion)  # no fallback: one NNAPI model
            eager, latency, expected, actual = _measure(model, conversion.module, inputs,
                                                        args.runs, through_torch)
            error = float((actual - expected).abs().max() / expected.abs().max())
            print(f"{family:18} {name:28} {len(conversion.model.operations):5}"
                  f" {conversion.feature_level:5} {conversion.seconds:9.1f}"
                  f" {eager * 1e3:9.1f} {latency * 1e3:9.1f} {latency / eager:5.1f}x"
                  f" {error:8.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
