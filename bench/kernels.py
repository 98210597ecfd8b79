"""The host runtime's float kernels where transformers and modern CNNs spend their time, one
operation at a time, against the same PyTorch operation in the same process: softmax over
attention rows, GELU (the fused element-wise chain it converts to), a composed layer norm,
ConvNeXt's 7x7 depthwise convolution, and a text encoder's attention-mask operations (TILE,
EQUAL, SELECT, CAST) through the executor's runners.

Each line gives the median of the runtime (native kernels) and of eager, called in turn so
that a change of the machine's load reaches both alike, and their ratio. Run it on two
checkouts (each built in place) to compare kernels before and after a change.

    PYTHONPATH=src python3 bench/kernels.py [--runs 100] [--threads 1]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import alternating_medians  # noqa: E402
from torch_nnapi.convert.api import Conversion, convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.host import host_inputs, model_for, program_of  # noqa: E402
from torch_nnapi.convert.tools.threads import set_num_threads  # noqa: E402
from torch_nnapi.runtime import Compilation  # noqa: E402


class MaskedScores(nn.Module):
    """A text encoder's attention mask: padding positions compared, tiled over the heads and
    selected away from the scores."""

    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        keep = mask.unsqueeze(1).unsqueeze(2).repeat(1, 4, 1, 1) == 1
        return torch.where(keep, scores, torch.full_like(scores, -1e4)) + mask.float().sum()


def _cases() -> dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]]:
    return {
        "softmax 12x197x197": lambda: (nn.Softmax(-1), (torch.randn(12, 197, 197),)),
        "gelu 3136x384": lambda: (nn.GELU(), (torch.randn(1, 3136, 384),)),
        "layer norm 3136x384": lambda: (nn.LayerNorm(384), (torch.randn(1, 3136, 384),)),
        "depthwise 7x7 96x56x56": lambda: (
            nn.Conv2d(96, 96, 7, padding=3, groups=96), (torch.randn(1, 96, 56, 56),)),
        "depthwise 7x7 384x14x14": lambda: (
            nn.Conv2d(384, 384, 7, padding=3, groups=384), (torch.randn(1, 384, 14, 14),)),
        "attention mask 4x32x32": lambda: (
            MaskedScores(), (torch.randn(1, 4, 32, 32), torch.randint(0, 2, (1, 32)))),
    }


def _measure(model: nn.Module, inputs: tuple[torch.Tensor, ...], runs: int
             ) -> tuple[int, float, float]:
    """(NNAPI operations, eager seconds, runtime seconds) of one case."""
    conversion = convert_with_details(model, inputs)
    assert isinstance(conversion, Conversion)  # one NNAPI model
    nnapi_model = model_for(conversion.module, inputs)
    ready = host_inputs(program_of(conversion.module), list(inputs))
    compilation = Compilation(nnapi_model)
    compilation.run(ready)  # plans the runners and fusions the timed runs replay
    with torch.no_grad():
        eager, runtime = alternating_medians(
            [lambda: model(*inputs), lambda: compilation.run(ready)], runs)
    return len(nnapi_model.operations), eager, runtime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="timed calls of each side")
    parser.add_argument("--threads", type=int, default=1, help="threads of both sides")
    args = parser.parse_args()
    if args.runs < 1 or args.threads < 1:
        parser.error("--runs and --threads must be at least 1")
    set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    print(f"{args.threads} threads; host runtime (native kernels) against eager, medians of"
          f" {args.runs} alternating calls")
    header = f"{'operation':26} {'ops':>4} {'eager ms':>9} {'runtime ms':>10} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for name, make in _cases().items():
        torch.manual_seed(0)
        model, inputs = make()
        operations, eager, runtime = _measure(model.eval(), inputs, args.runs)
        print(f"{name:26} {operations:4} {eager * 1e3:9.3f} {runtime * 1e3:10.3f}"
              f" {runtime / eager:5.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
