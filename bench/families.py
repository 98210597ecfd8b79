"""Conversion time, and converted latency against eager, by model family: recurrent sequence
models and torchvision's quantized classifiers.

Each model converts from the nn.Module (timed), then runs through PyTorch's NNAPI runtime and
torch-nnapi's libneuralnetworks.so (the host runtime when the library is not built) against
eager PyTorch in the same process, both on 2 threads; the ratio is converted / eager latency.
Quantized models run with PyTorch's qnnpack engine. The models are those of the tests
(tests/convert/zoo.py, tests/realmodels/quantized.py).

    PYTHONPATH=src python3 bench/families.py [--runs 5] [--families recurrent,quantized,...]
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
from torch import nn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import (  # noqa: E402
    backend_name,
    eager_and_converted,
    torch_runtime_available,
)
from tests.convert import zoo  # noqa: E402
from torch_nnapi.convert.api import Conversion, convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.check import quantized_engine  # noqa: E402

THREADS = 2

# A benchmarked model: its name, the module, its example inputs.
Case = tuple[str, nn.Module, tuple[torch.Tensor, ...]]


class Streaming(nn.Module):
    """One step of a 2-layer LSTM with its states in and out (a streaming speech model)."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(40, 128, num_layers=2)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, (h, c) = self.lstm(x, (h, c))
        return y, h, c


def _recurrent() -> list[Case]:
    return [
        ("text classifier (bi-LSTM x2, 32 tokens)", zoo.TextClassifier(),
         (torch.randint(0, 50, (1, 32)),)),
        ("seq2seq GRU (16 -> 8 tokens)", zoo.Seq2Seq(),
         (torch.randint(0, 30, (1, 16)), torch.randint(0, 30, (1, 8)))),
        ("speech tagger (conv + LSTM x2, 50 frames)", zoo.SpeechTagger(),
         (torch.randn(1, 10, 100),)),
        ("streaming LSTM step (2 x 128)", Streaming(),
         (torch.randn(1, 1, 40), torch.randn(2, 1, 128), torch.randn(2, 1, 128))),
    ]


def _quantized() -> list[Case]:
    from tests.realmodels.quantized import MODELS, quantized_model

    with quantized_engine("qnnpack"):
        return [(f"{name} (eager PTQ, {size}x{size})", quantized_model(name),
                 (torch.randn(1, 3, size, size),))
                for name, size in MODELS.items()]


FAMILIES = {"recurrent": _recurrent, "quantized": _quantized}





def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per latency")
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    warnings.simplefilter("ignore")
    through_torch = torch_runtime_available()
    print(f"{THREADS} threads; converted models run on the"
          f" {backend_name(through_torch)}")
    header = (f"{'family':10} {'model':44} {'ops':>5} {'convert s':>10} {'eager ms':>9}"
              f" {'nnapi ms':>9} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    for family in args.families.split(","):
        torch.manual_seed(0)
        with quantized_engine("qnnpack"):
            for name, model, inputs in FAMILIES[family]():
                model = model.eval()
                start = time.perf_counter()
                conversion = convert_with_details(model, inputs)
                assert isinstance(conversion, Conversion)  # no fallback: one NNAPI model
                seconds = time.perf_counter() - start
                eager, latency = eager_and_converted(model, conversion.module, inputs, args.runs,
                                                     through_torch, warmup=10)
                print(f"{family:10} {name:44} {len(conversion.model.operations):5}"
                      f" {seconds:10.2f} {eager * 1e3:9.2f} {latency * 1e3:9.2f}"
                      f" {latency / eager:6.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
