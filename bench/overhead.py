"""What one execution costs besides its arithmetic: a model of one ADD on a few values, the
smallest a streaming step can be, run the three ways a user runs a converted model.

* eager PyTorch (the baseline);
* the host runtime's Python API (``Compilation.run``: the executor's per-execution work);
* the converted module through PyTorch's NNAPI runtime on torch-nnapi's
  ``libneuralnetworks.so``: PyTorch's wrapper, the NNAPI C API calls it makes per execution
  (create, set inputs and outputs, compute, free), each bridged into Python, and the same
  executor.

The difference between the last two is the C API's and the wrapper's per-call overhead (issue
21: about 0.2 ms, most of a streaming LSTM step). Medians of calls made in turn, so that a
change of the machine's load reaches all three alike.

    PYTHONPATH=src python3 bench/overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import alternating_medians, torch_runtime_available  # noqa: E402
from torch_nnapi.convert.api import Conversion, convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.host import host_inputs, model_for, program_of  # noqa: E402
from torch_nnapi.convert.tools.threads import set_num_threads  # noqa: E402
from torch_nnapi.runtime import Compilation  # noqa: E402


class Step(nn.Module):
    """One ADD: a model whose time is all per-execution overhead."""

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return x + h


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="timed calls of each way")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if not torch_runtime_available():
        print("libneuralnetworks.so is not built (pip install -e . builds it): nothing to"
              " compare", file=sys.stderr)
        return 2
    set_num_threads(1)
    warnings.simplefilter("ignore")
    model, inputs = Step().eval(), (torch.randn(1, 16), torch.randn(1, 16))
    conversion = convert_with_details(model, inputs)
    assert isinstance(conversion, Conversion)  # one NNAPI model
    module = conversion.module
    compilation = Compilation(model_for(module, inputs))
    ready = host_inputs(program_of(module), list(inputs))
    with torch.no_grad():
        eager, python_api, through_c = alternating_medians(
            [lambda: model(*inputs), lambda: compilation.run(ready),
             lambda: module(*inputs)], args.runs)
    print(f"one ADD of 1x16 values, 1 thread, medians of {args.runs} calls in turn")
    print(f"  eager PyTorch                                   {eager * 1e6:8.1f} us")
    print(f"  host runtime, Python API (Compilation.run)      {python_api * 1e6:8.1f} us")
    print("  converted module: PyTorch's NNAPI runtime on")
    print(f"    libneuralnetworks.so (C API over the runtime) {through_c * 1e6:8.1f} us")
    print(f"  C API and wrapper overhead per execution        "
          f"{(through_c - python_api) * 1e6:8.1f} us ({through_c / eager:.1f}x eager)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
